// The extension module npusim._npusim: the library API (npusim/npusim.hpp) for Python. The
// package's __init__.py turns Python arguments into these calls (docs/python.md); here options are
// plain values, stats and hardware descriptions JSON text, tensors float32 NumPy arrays. Every
// call releases the GIL while npusim works; simulations take turns (npusim/npusim.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "npusim/npusim.hpp"

namespace py = pybind11;

namespace {

py::array_t<float> to_array(const npusim::Tensor& t) {
  std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
  py::array_t<float> a(shape);
  std::copy(t.values.begin(), t.values.end(), a.mutable_data());
  return a;
}

py::list tensor_list(const std::vector<npusim::Tensor>& tensors) {
  py::list out;
  for (const auto& t : tensors) out.append(py::make_tuple(t.name, to_array(t)));
  return out;
}

npusim::Target target(const py::dict& o) {
  npusim::Target t;
  t.hw = o["hw"].cast<std::string>();
  if (!o["hw_json"].is_none()) {
    t.hw_description = nlohmann::json::parse(o["hw_json"].cast<std::string>());
  }
  t.workload = o["workload"].cast<std::string>();
  if (!o["batch"].is_none()) t.batch = o["batch"].cast<int>();
  t.seed = o["seed"].cast<uint64_t>();
  t.dtype = o["dtype"].cast<std::string>();
  t.input_npy = o["input_npy"].cast<std::string>();
  t.parallel = o["parallel"].cast<std::string>();
  if (!o["micro_batch"].is_none()) t.micro_batch = o["micro_batch"].cast<int>();
  t.host_ops = o["host_ops"].cast<std::string>();
  t.calibration_file = o["calibration_file"].cast<std::string>();
  t.calibration_method = o["calibration_method"].cast<std::string>();
  if (!o["calibration_percentile"].is_none()) {
    t.calibration_percentile = o["calibration_percentile"].cast<double>();
  }
  if (o.contains("prune")) t.prune = o["prune"].cast<std::string>();
  if (o.contains("weight_dtype")) t.weight_dtype = o["weight_dtype"].cast<std::string>();
  if (o.contains("weight_group") && !o["weight_group"].is_none()) {
    t.weight_group = o["weight_group"].cast<int>();
  }
  if (o.contains("compress_weights")) {
    t.compress_weights = o["compress_weights"].cast<std::string>();
  }
  if (o.contains("memory_fidelity")) t.memory_fidelity = o["memory_fidelity"].cast<std::string>();
  return t;
}

// The run's result for the Python Result class: stats and hardware as JSON text, the tensors as
// (name, array) lists, and the result itself (for its traces) as an opaque handle.
py::dict run(const py::dict& o) {
  npusim::RunOptions options;
  static_cast<npusim::Target&>(options) = target(o);
  options.fidelity = o["fidelity"].cast<std::string>();
  options.values = o["values"].cast<bool>();
  options.intermediates = o["intermediates"].cast<bool>();
  options.float_outputs = o["float_outputs"].cast<bool>();
  options.record_trace = o["trace"].cast<bool>();
  auto result = std::make_shared<npusim::RunResult>();
  {
    py::gil_scoped_release release;
    *result = npusim::run(options);
  }
  py::dict r;
  // As `npusim run --out` writes stats.json and config.resolved.json.
  r["stats"] = result->stats.dump(2) + "\n";
  r["hardware"] = result->hardware.dump(2) + "\n";
  r["outputs"] = tensor_list(result->outputs);
  r["intermediates"] = tensor_list(result->intermediates);
  r["float_outputs"] = tensor_list(result->float_outputs);
  r["wall_seconds"] = result->wall_seconds;
  r["mismatch"] = result->mismatch;
  r["handle"] = py::cast(std::shared_ptr<const npusim::RunResult>(result));
  return r;
}

// npusim serve: stats as JSON text, the per-request and per-step CSV text, and the report.
py::dict serve(const py::dict& o) {
  npusim::ServeOptions options;
  static_cast<npusim::Target&>(options) = target(o);
  options.fidelity = o["fidelity"].cast<std::string>();
  options.values = false;
  options.trace = o["trace"].cast<std::string>();
  options.max_batch = o["max_batch"].cast<int>();
  options.kv_block_tokens = o["kv_block_tokens"].cast<int>();
  options.max_step_tokens = o["max_step_tokens"].cast<int>();
  if (!o["kv_cache_bytes"].is_none()) options.kv_cache_bytes = o["kv_cache_bytes"].cast<uint64_t>();
  options.slo_ttft_s = o["slo_ttft"].cast<double>();
  options.slo_tpot_s = o["slo_tpot"].cast<double>();
  options.grid_tokens = o["grid_tokens"].cast<int>();
  options.max_simulated_batch = o["max_simulated_batch"].cast<int>();
  npusim::ServeResult result;
  {
    py::gil_scoped_release release;
    result = npusim::serve(options);
  }
  py::dict r;
  r["stats"] = result.stats.dump(2) + "\n";
  r["requests_csv"] = result.requests_csv;
  r["steps_csv"] = result.steps_csv;
  r["trace_json"] = result.trace_json;
  r["html"] = result.html;
  r["report"] = result.report();
  return r;
}

// npusim train: stats as JSON text, the loss per step, the report and the HTML report.
py::dict train(const py::dict& o) {
  npusim::TrainOptions options;
  static_cast<npusim::Target&>(options) = target(o);
  options.fidelity = o["fidelity"].cast<std::string>();
  options.steps = o["steps"].cast<int>();
  options.optimizer = o["optimizer"].cast<std::string>();
  options.lr = o["lr"].cast<double>();
  options.loss = o["loss"].cast<std::string>();
  options.data = o["data"].cast<std::string>();
  options.shuffle = o["shuffle"].cast<bool>();
  options.eval_every = o["eval_every"].cast<int>();
  options.save_weights = o["save_weights"].cast<std::string>();
  options.values = o["values"].cast<bool>();
  options.optimizer_on = o["optimizer_on"].cast<std::string>();
  npusim::TrainResult result;
  {
    py::gil_scoped_release release;
    result = npusim::train(options);
  }
  py::dict r;
  r["stats"] = result.stats.dump(2) + "\n";
  r["loss"] = result.loss;
  r["report"] = result.report();
  r["html"] = result.html();
  r["wall_seconds"] = result.wall_seconds;
  r["mismatch"] = result.mismatch;
  return r;
}

// npusim generate: stats as JSON text, the prompt and generated ids as int32 arrays
// [batch, tokens], and the report.
py::dict generate(const py::dict& o) {
  npusim::GenerateOptions options;
  static_cast<npusim::Target&>(options) = target(o);
  options.fidelity = o["fidelity"].cast<std::string>();
  options.values = o["values"].cast<bool>();
  options.prompt_tokens = o["prompt_tokens"].cast<int>();
  options.new_tokens = o["new_tokens"].cast<int>();
  options.weights = o["weights"].cast<std::string>();
  options.record_trace = o["trace"].cast<bool>();
  options.trace_steps = o["trace_steps"].cast<std::string>();
  npusim::GenerateResult result;
  {
    py::gil_scoped_release release;
    result = npusim::generate(options);
  }
  auto ids = [](const std::vector<int32_t>& v, int rows, int cols) {
    py::array_t<int32_t> a(std::vector<py::ssize_t>{rows, cols});
    std::copy(v.begin(), v.end(), a.mutable_data());
    return a;
  };
  py::dict r;
  r["stats"] = result.stats.dump(2) + "\n";
  r["tokens"] = ids(result.tokens, result.batch, result.new_tokens);
  r["prompt"] = ids(result.prompt, result.batch, result.prompt_tokens);
  {
    py::array_t<float> a(std::vector<py::ssize_t>{result.new_tokens, result.batch, result.vocab});
    if (!result.logits.empty())
      std::copy(result.logits.begin(), result.logits.end(), a.mutable_data());
    r["logits"] = result.logits.empty() ? py::object(py::none()) : py::object(a);
  }
  r["report"] = result.report();
  r["wall_seconds"] = result.wall_seconds;
  r["mismatch"] = result.mismatch;
  r["trace_json"] = result.trace_json;
  r["html"] = result.html();
  return r;
}

}  // namespace

// libsystemc refers to the program's sc_main (sc_elab_and_sim calls it) and cannot be loaded
// without one. The module never calls sc_elab_and_sim: npusim::run elaborates and runs its designs
// itself.
extern "C" __attribute__((visibility("default"))) int sc_main(int, char*[]) { return 1; }

PYBIND11_MODULE(_npusim, m) {
  // SystemC's banner would go to the notebook or the script's stdout on the first run.
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  m.doc() = "npusim's library API (use the npusim package, not this module)";
  py::register_exception<npusim::UserError>(m, "InputError", PyExc_ValueError);
  py::register_exception<npusim::InternalError>(m, "InternalError", PyExc_RuntimeError);

  py::class_<npusim::RunResult, std::shared_ptr<npusim::RunResult>>(m, "RunHandle")
      .def("report", &npusim::RunResult::report, py::arg("per_layer") = false)
      .def("layers_csv", &npusim::RunResult::layers_csv)
      .def("write_trace_json", &npusim::RunResult::write_trace_json,
           py::call_guard<py::gil_scoped_release>())
      .def("write_html", &npusim::RunResult::write_html, py::call_guard<py::gil_scoped_release>())
      .def("descriptors", [](const npusim::RunResult& r) {
        py::list out;
        for (const auto& d : r.descriptors)
          out.append(py::make_tuple(d.path, d.unit, d.description));
        return out;
      });
  m.def("run", &run);
  m.def("compile", [](const py::dict& o) {
    const npusim::Target t = target(o);
    py::gil_scoped_release release;
    return npusim::compile(t);
  });
  m.def("validate", [](const py::dict& o) {
    const npusim::Target t = target(o);
    npusim::Validation v;
    {
      py::gil_scoped_release release;
      v = npusim::validate(t);
    }
    py::dict d;
    d["hw_name"] = v.hw_name;
    if (v.has_workload) {
      d["network"] = v.network;
      d["layers"] = v.layers;
      d["macs"] = v.macs;
      d["batch"] = v.batch;
      d["instructions"] = v.instructions;
    }
    return d;
  });
  m.def("presets", [] {
    py::list out;
    for (const auto& p : npusim::presets()) {
      py::dict d;
      d["name"] = p.name;
      d["headline"] = p.headline;
      d["description"] = p.description;
      py::dict facts;
      for (const auto& [label, value] : p.facts) facts[py::str(label)] = value;
      d["facts"] = facts;
      out.append(d);
    }
    return out;
  });
  m.def("resolved_hardware",
        [](const std::string& hw) { return npusim::resolved_hardware(hw).dump(); });
  m.def("generate", &generate);
  m.def("train", &train);
  m.def("serve", &serve);
  m.def("decoders", [] {
    py::list out;
    for (const auto& e : npusim::decoders()) {
      py::dict d;
      d["name"] = e.name;
      d["description"] = e.description;
      d["layers"] = e.layers;
      d["hidden"] = e.hidden;
      d["heads"] = e.heads;
      d["kv_heads"] = e.kv_heads;
      d["ffn"] = e.ffn;
      d["vocab"] = e.vocab;
      d["max_context"] = e.max_context;
      d["parameters"] = e.parameters;
      out.append(d);
    }
    return out;
  });
  m.def("zoo", [] {
    py::list out;
    for (const auto& z : npusim::zoo()) {
      py::dict d;
      d["name"] = z.name;
      d["batch"] = z.batch;
      d["layers"] = z.layers;
      d["macs"] = z.macs;
      d["description"] = z.description;
      out.append(d);
    }
    return out;
  });
}
