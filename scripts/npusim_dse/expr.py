"""A small, safe expression language for sweep constraints.

Expressions look like Python: `area.total_mm2 <= 100`, `rows * cols <= 65536 and batch >= 8`,
`max(rows, cols) / min(rows, cols) <= 4`, `dtype == 'bf16'`. They are parsed with the `ast`
module (parsing runs nothing) and evaluated by the interpreter below, which knows only numbers,
strings, booleans, names (dotted names such as `dram.read_bytes` are one name), arithmetic,
comparisons, `and` / `or` / `not`, conditional `a if c else b`, and the functions in FUNCTIONS.
Anything else is refused when the expression is parsed, before any point runs.
"""

import ast
import math
import operator

FUNCTIONS = {
    "min": min,
    "max": max,
    "abs": abs,
    "sqrt": math.sqrt,
    "log2": math.log2,
    "log10": math.log10,
    "ceil": math.ceil,
    "floor": math.floor,
}

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_MAX_EXPONENT = 1024  # keeps `10 ** 10 ** 10` from running for ever


class ExpressionError(Exception):
    """The expression is not in the language, or cannot be evaluated on the given names."""


def _dotted_name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted_name(node.value)
        return None if base is None else base + "." + node.attr
    return None


class Expression:
    """A parsed constraint. `names` are the names it reads; `evaluate(lookup)` computes it."""

    def __init__(self, text):
        if not isinstance(text, str) or not text.strip():
            raise ExpressionError("expected a non-empty expression string")
        self.text = text
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as e:
            raise ExpressionError(f"'{text}': invalid syntax at column {e.offset or 0}") from None
        self.names = []
        self._check(tree.body)
        self._tree = tree.body

    def _check(self, node):
        name = _dotted_name(node)
        if name is not None:
            if name not in self.names:
                self.names.append(name)
            return
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float, str)):
                return
            raise ExpressionError(f"'{self.text}': constant {node.value!r} is not allowed")
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                self._check(v)
            return
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub, ast.UAdd)):
            self._check(node.operand)
            return
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            self._check(node.left)
            self._check(node.right)
            return
        if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
            self._check(node.left)
            for c in node.comparators:
                self._check(c)
            return
        if isinstance(node, ast.IfExp):
            for part in (node.test, node.body, node.orelse):
                self._check(part)
            return
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise ExpressionError(
                    f"'{self.text}': only these functions may be called: "
                    f"{', '.join(sorted(FUNCTIONS))}")
            if node.keywords or not node.args:
                raise ExpressionError(f"'{self.text}': {node.func.id}() takes positional arguments")
            for a in node.args:
                self._check(a)
            return
        raise ExpressionError(
            f"'{self.text}': '{ast.unparse(node)}' is not in the constraint language (numbers, "
            "strings, names, + - * / // % **, comparisons, and/or/not, min/max/abs/...)")

    def evaluate(self, lookup):
        """`lookup(name)` returns a name's value or raises KeyError."""
        return self._eval(self._tree, lookup)

    def _eval(self, node, lookup):
        name = _dotted_name(node)
        if name is not None:
            try:
                return lookup(name)
            except KeyError:
                raise ExpressionError(f"'{self.text}': no value named '{name}'") from None
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.BoolOp):
            is_and = isinstance(node.op, ast.And)
            result = is_and
            for v in node.values:
                result = self._eval(v, lookup)
                if bool(result) != is_and:
                    return result
            return result
        if isinstance(node, ast.UnaryOp):
            v = self._eval(node.operand, lookup)
            if isinstance(node.op, ast.Not):
                return not v
            self._need_number(v)
            return -v if isinstance(node.op, ast.USub) else +v
        if isinstance(node, ast.BinOp):
            a, b = self._eval(node.left, lookup), self._eval(node.right, lookup)
            if not (isinstance(node.op, ast.Add) and isinstance(a, str) and isinstance(b, str)):
                self._need_number(a)
                self._need_number(b)
            if isinstance(node.op, ast.Pow) and abs(b) > _MAX_EXPONENT:
                raise ExpressionError(f"'{self.text}': exponent {b} is too large")
            try:
                return _BINARY[type(node.op)](a, b)
            except (ZeroDivisionError, OverflowError, ValueError) as e:
                raise ExpressionError(f"'{self.text}': {e}") from None
        if isinstance(node, ast.Compare):
            left = self._eval(node.left, lookup)
            for op, comparator in zip(node.ops, node.comparators):
                right = self._eval(comparator, lookup)
                try:
                    if not _COMPARE[type(op)](left, right):
                        return False
                except TypeError:
                    raise ExpressionError(
                        f"'{self.text}': cannot compare {left!r} with {right!r}") from None
                left = right
            return True
        if isinstance(node, ast.IfExp):
            test = self._eval(node.test, lookup)
            return self._eval(node.body if test else node.orelse, lookup)
        if isinstance(node, ast.Call):
            args = [self._eval(a, lookup) for a in node.args]
            for a in args:
                self._need_number(a)
            try:
                return FUNCTIONS[node.func.id](*args)
            except (TypeError, ValueError, OverflowError) as e:
                raise ExpressionError(f"'{self.text}': {node.func.id}(): {e}") from None
        raise AssertionError(f"unchecked node {ast.dump(node)}")  # _check admitted it: a bug

    def _need_number(self, v):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ExpressionError(f"'{self.text}': expected a number, got {v!r}")
