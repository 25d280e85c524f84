"""`--release`: a saved graph without build-time debug and provenance: no doc strings, no node
metadata (the module path and class each node was built in), node names cut to their op and
index, model metadata only its functional `mobius.` keys. The graph computes the same; only
its size and what a debugger can read from it change."""

from __future__ import annotations

import onnx_ir as ir

FUNCTIONAL = "mobius."  # metadata keys a runtime or mobius itself reads back


def strip(model: ir.Model) -> int:
    """Strip `model` in place; the characters of text removed."""
    removed = sum(_clear_doc(item) for item in (model, model.graph))
    for key in [k for k in model.metadata_props if not k.startswith(FUNCTIONAL)]:
        removed += len(key) + len(model.metadata_props.pop(key))
    for index, node in enumerate(model.graph.all_nodes()):
        removed += _clear_doc(node)
        removed += sum(len(k) + len(v) for k, v in node.metadata_props.items())
        node.metadata_props.clear()
        short = f"{node.op_type}_{index}"
        removed += max(0, len(node.name or "") - len(short))
        node.name = short
    return removed


def _clear_doc(item) -> int:
    text = item.doc_string or ""
    item.doc_string = None
    return len(text)
