"""What ``hpu_backend`` did with each graph, in the bridge's two compile logs, and its eager-fallback rule.

For every graph AOTAutograd hands the backend (forward, backward or inference), the bridge's partitioner asks its
shared layer, node by node, whether the op must fall back to eager execution on the host, and logs the answer on
``compile_backend.shared_layer.logger`` as ``Node: <name> requires fallback: <True|False>``; the nodes that stay on
the device form HPU graphs, each lowered to TorchScript and logged on ``compile_backend.passes.logger`` after the
line ``####PyTorch-generated JIT IR graph for this HPU graph:####``, where each op reads ``%x : Tensor =
<namespace>::<op>(...)``. Random ops are lowered to the bridge's seeded wrappers (``hpu::habana_rand`` ...;
``PT_HPU_WRAP_RANDOM_OPS_COMPILE``, on by default), so that is what the IR names.

The fallback rule is the part of the bridge's that does not depend on its device kernels (its
``check_for_default_fallback``): a fixed list of ops (RNG state, ``slice_backward``, ``addcmul``, ``index``,
``nonzero``, ``_unique2``, ``bincount``), ``permute`` of int64, ``full``/``mul`` with a Python bool operand, a NaN
scalar operand, and the SDPA kernels under dynamic shapes. Which other ops lack a kernel for a dtype is decided by
the bridge's C++ library; the stand-in, whose device runs every op, answers no. As on the bridge, a node that needs
a fallback is refused unless ``config.use_eager_fallback`` (``PT_HPU_USE_EAGER_FALLBACK``, on by default) allows
it; allowed, it runs as every op does here.

Nothing is formatted unless a log is listening (``set_store_data(True)`` or debug logging on); the fallback rule is
checked only when eager fallback is off.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

from gaudi_standin.compiler.logs import get_compile_backend_logger

#: The bridge's graph logger (``compile_backend.passes.logger``): each HPU graph's node placement and TorchScript IR.
GRAPH_LOGGER = get_compile_backend_logger()
#: The bridge's fallback logger (``compile_backend.shared_layer.logger``): each op's eager-fallback decision.
FALLBACK_LOGGER = get_compile_backend_logger()

#: Ops the bridge always runs eagerly on the host (its shared layer's ``hpu_fallback_op_list``).
FALLBACK_OPS = frozenset(
    {"seed", "manual_seed", "initial_seed", "get_rng_state", "set_rng_state", "slice_backward", "addcmul", "index"}
    | {"nonzero", "_unique2", "bincount"}
)

#: Ops that fall back when shapes are dynamic (the bridge's ``hpu_ds_fallback_list``: the SDPA kernels).
DYNAMIC_SHAPE_FALLBACK_OPS = frozenset(
    {f"sdpa_{kind}" for kind in ("fwd", "fwd_dropout", "fwd_non_dropout", "fwd_dropout_seed", "bwd")}
    | {f"sdpa_recomp_{kind}" for kind in ("fwd", "fwd_dropout", "fwd_non_dropout", "fwd_dropout_seed", "bwd")}
    | {"fp8_sdpa_recomp_fwd"}
)

#: aten random ops (after the bridge's decompositions of ``*_like`` and ``randint`` overloads) and the seeded
#: wrapper (``hpu::habana_<name>``) the bridge lowers each to.
RANDOM_WRAPPERS = {
    "bernoulli": "bernoulli",
    "poisson": "poisson",
    "rand": "rand",
    "rand_like": "rand",
    "randn": "randn",
    "randn_like": "randn",
    "randint": "randint",
    "randint_like": "randint",
    "multinomial": "multinomial",
    "randperm": "randperm",
    "native_dropout": "native_dropout",
    "uniform": "uniform",
}

JIT_IR_HEADER = "####PyTorch-generated JIT IR graph for this HPU graph:####\n%s"


def op_name(node: torch.fx.Node) -> str:
    """The op's name without namespace or overload (``mul`` for ``aten.mul.Tensor``), as the shared layer uses it."""
    return getattr(node.target, "__name__", str(node.target)).split(".")[0]


def output_device(node: torch.fx.Node) -> torch.device:
    """The device of a node's (first) tensor output; the host for scalars and sizes."""
    value = node.meta.get("val")
    if isinstance(value, (tuple, list)):
        value = next((item for item in value if isinstance(item, torch.Tensor)), None)
    return value.device if isinstance(value, torch.Tensor) else torch.device("cpu")


def _is_dynamic(node: torch.fx.Node) -> bool:
    value = node.meta.get("val")
    values = value if isinstance(value, (tuple, list)) else (value,)
    return any(
        isinstance(size, torch.SymInt) for item in values if isinstance(item, torch.Tensor) for size in item.shape
    )


def requires_fallback(node: torch.fx.Node) -> bool:
    """Whether the bridge's shared layer sends this ``call_function`` node to eager execution on the host."""
    if output_device(node).type != "hpu":
        return False
    name = op_name(node)
    if name in FALLBACK_OPS:
        return True
    if name == "permute":
        value = node.meta.get("val")
        if isinstance(value, torch.Tensor) and value.dtype == torch.int64:
            return True
    if name in ("full", "mul") and len(node.args) > 1 and isinstance(node.args[1], bool):
        return True
    if name in DYNAMIC_SHAPE_FALLBACK_OPS and _is_dynamic(node):
        return True
    return any(isinstance(arg, float) and math.isnan(arg) for arg in node.args)


def _is_device_copy(node: torch.fx.Node) -> bool:
    """A ``_to_copy`` between device tensors: the bridge places it in the HPU graph without asking."""
    source = next((arg for arg in node.args if isinstance(arg, torch.fx.Node)), None)
    return source is not None and output_device(source).type == output_device(node).type == "hpu"


def _ir_line(node: torch.fx.Node) -> str:
    """One TorchScript IR line for ``node``, as ``torch.jit.script`` prints a call after overloads are stripped."""
    args = ", ".join(_ir_value(arg) for arg in node.args)
    name = op_name(node)
    if name in RANDOM_WRAPPERS:
        qualified = f"hpu::habana_{RANDOM_WRAPPERS[name]}"
        args = f"%seed, {args}" if args else "%seed"
    elif node.target is operator.getitem:
        qualified = "prim::TupleIndex"
    else:
        schema = getattr(node.target, "_schema", None)
        qualified = schema.name if schema is not None else f"prim::{name}"
    return f"  %{node.name} : Tensor = {qualified}({args})"


def _ir_value(arg: Any) -> str:
    if isinstance(arg, torch.fx.Node):
        return f"%{arg.name}"
    if isinstance(arg, (list, tuple)):
        return "[" + ", ".join(_ir_value(item) for item in arg) + "]"
    return repr(arg)


def jit_ir(graph: torch.fx.GraphModule, nodes: list[torch.fx.Node]) -> str:
    """The TorchScript IR of the HPU graph made of ``nodes``, in the form the bridge logs it."""
    inputs = [node for node in graph.graph.nodes if node.op == "placeholder"]
    lines = ["graph(" + ",\n      ".join(f"%{node.name} : Tensor" for node in inputs) + "):"]
    if any(op_name(node) in RANDOM_WRAPPERS for node in nodes):
        lines.append("  %seed : Tensor = hpu::habana_seed_generator(%counter_pl, %seed_pl)")
    lines += [_ir_line(node) for node in nodes]
    returned = graph.graph.output_node().args[0]
    outputs = [arg for arg in tree_leaves(returned) if isinstance(arg, torch.fx.Node)]
    lines.append("  return (" + ", ".join(f"%{node.name}" for node in outputs) + ")")
    return "\n".join(lines)


def record(graph: torch.fx.GraphModule, graph_logger: Any, fallback_logger: Any, eager_fallback: bool) -> None:
    """Place the graph's nodes as the bridge's partitioner does: log each answer and each HPU graph's IR.

    Raises ``AssertionError`` (the bridge's message) for a node that needs eager fallback when it is not allowed.
    """
    logging = graph_logger.listening() or fallback_logger.listening()
    if not logging and eager_fallback:
        return
    on_device: list[torch.fx.Node] = []
    for node in graph.graph.nodes:
        if node.op != "call_function" or isinstance(node.target, torch._ops.HigherOrderOperator):
            continue
        if "to_copy" in op_name(node):  # placed by the partitioner itself, never asked about
            if _is_device_copy(node):
                on_device.append(node)
            continue
        fallback = requires_fallback(node)
        if logging:
            fallback_logger.debug("Node: %s requires fallback: %s", node, fallback)
        if fallback and not eager_fallback:
            raise AssertionError(f"Node: {node} requires fallback: {fallback}")
        placement = "eager" if fallback or output_device(node).type != "hpu" else "hpu_cluster"
        if logging:
            graph_logger.info("Node placement. Node: {} op: {} placement: {}", node.name, node.op, placement)
        if placement == "hpu_cluster":
            on_device.append(node)
    if logging and on_device:
        graph_logger.debug(JIT_IR_HEADER, jit_ir(graph, on_device))
