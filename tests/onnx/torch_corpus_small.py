"""Small models for the torch 2.x (dynamo) fixtures of the torch.onnx corpus (issue 21).

The Debian corpus (torch_corpus.py) exports full-size torchvision models at test time with torch
1.13's TorchScript exporter. Users export with torch 2.x, whose default exporter (dynamo, opset 18
and later) writes other graphs; it is not in Debian, so those models are exported once on a machine
that has it and committed (tests/onnx/torch2/, each under 2 MB with torch's outputs). To stay that
small they are the same architectures at reduced width (torchvision's own constructors with
`width_mult` / a small configuration, 10 classes) and tiny Hugging Face GPT-2 / Llama
configurations, random weights from the corpus seed.

Each builder returns (module in eval mode, example input tensor).
"""


def _torch():
    import torch
    return torch


def _image(shape, seed):
    torch = _torch()
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _tv(name, side, **kwargs):
    import torchvision
    return getattr(torchvision.models, name)(weights=None, num_classes=10, **kwargs), (1, 3, side, side)


def mobilenet_v3_small_w05():
    return _tv("mobilenet_v3_small", 64, width_mult=0.5)


def mobilenet_v2_w035():
    return _tv("mobilenet_v2", 64, width_mult=0.35)


def shufflenet_v2_x0_5():
    return _tv("shufflenet_v2_x0_5", 64)


def efficientnet_tiny():
    from torchvision.models import efficientnet as ef
    setting, last = ef._efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.34)
    return ef.EfficientNet(setting, 0.2, last_channel=last, num_classes=10), (1, 3, 64, 64)


def regnet_tiny():
    from torchvision.models import regnet
    params = regnet.BlockParams.from_init_params(depth=6, w_0=16, w_a=8.0, w_m=2.0, group_width=8,
                                                 se_ratio=0.25)
    return regnet.RegNet(params, num_classes=10), (1, 3, 64, 64)


def vit_tiny():
    from torchvision.models import vision_transformer as vt
    model = vt.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                 hidden_dim=64, mlp_dim=128, num_classes=10)
    _torch().nn.init.normal_(model.heads.head.weight, std=0.02)  # torchvision zeroes the head
    return model, (1, 3, 32, 32)


def swin_tiny():
    from torchvision.models import swin_transformer as sw
    return sw.SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4],
                              window_size=[4, 4], num_classes=10), (1, 3, 64, 64)


def resnet_tiny():
    """ResNet's patterns (conv-BN-ReLU, residual adds, a strided 1x1 shortcut, global average
    pool, flatten, linear) at a width torchvision's ResNet does not offer."""
    torch = _torch()
    nn = torch.nn

    class Basic(nn.Module):
        def __init__(self, i, o, stride):
            super().__init__()
            self.c1 = nn.Conv2d(i, o, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(o)
            self.c2 = nn.Conv2d(o, o, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(o)
            self.short = None if stride == 1 and i == o else nn.Sequential(
                nn.Conv2d(i, o, 1, stride, bias=False), nn.BatchNorm2d(o))

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return torch.relu(y + (x if self.short is None else self.short(x)))

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                      nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            self.layers = nn.Sequential(Basic(16, 16, 1), Basic(16, 32, 2), Basic(32, 64, 2))
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(64, 10)

        def forward(self, x):
            return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))

    return Tiny(), (1, 3, 64, 64)


def _hf(kind):
    """A tiny Hugging Face causal LM (input ids -> logits), no cache, eager attention."""
    torch = _torch()
    import transformers
    if kind == "gpt2":
        cfg = transformers.GPT2Config(vocab_size=256, n_positions=64, n_embd=64, n_layer=2,
                                      n_head=4, use_cache=False)
        model = transformers.GPT2LMHeadModel(cfg)
    else:
        cfg = transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128,
                                       num_hidden_layers=2, num_attention_heads=4,
                                       num_key_value_heads=2, max_position_embeddings=64,
                                       use_cache=False)
        model = transformers.LlamaForCausalLM(cfg)
    model.config._attn_implementation = "eager"

    class Logits(torch.nn.Module):
        def __init__(self, lm):
            super().__init__()
            self.lm = lm

        def forward(self, input_ids):
            return self.lm(input_ids=input_ids, use_cache=False).logits

    return Logits(model), "ids"


def hf_gpt2_tiny():
    return _hf("gpt2")


def hf_llama_tiny():
    return _hf("llama")


BUILDERS = {f.__name__: f for f in (mobilenet_v3_small_w05, mobilenet_v2_w035, shufflenet_v2_x0_5,
                                     efficientnet_tiny, regnet_tiny, vit_tiny, swin_tiny,
                                     resnet_tiny, hf_gpt2_tiny, hf_llama_tiny)}


def build(name, seed, batch=1):
    """(module in eval mode, input tensor of `batch` samples)."""
    torch = _torch()
    model, shape = BUILDERS[name]()
    if shape == "ids":
        x = torch.randint(0, 256, (batch, 16), generator=torch.Generator().manual_seed(seed))
    else:
        x = _image((batch,) + tuple(shape[1:]), seed)
    return model.eval(), x
