"""GPUs over several nodes: "两机八卡" / "2 nodes x 8 GPUs" = 16 GPUs, "2机16卡" / "16 GPUs across 2 nodes" = 16.

`find_gpu` (mentions.py) reads the count next to the card; this module reads the nodes and decides whether that
count is per node or the job's total:
- per node when the question says so ("each", "per node", "每台", "每机"), or in the grid forms "2x8 H100" and
  "two 8-GPU nodes";
- the total when it says so ("in total", "across 2 nodes", "共", "总共");
- a DGX/HGX system is a node of 8 GPUs ("2 DGX H100" = 16);
- otherwise by the count: 8 or fewer is a node's cards (servers hold 1-8 GPUs: DGX/HGX 8, "单机8卡"), so
  "两台8卡" is 16; more than 8 is already the job's total ("2机16卡", "4机32卡").
"""

from __future__ import annotations

from service.agent.offline import patterns as rx
from service.agent.offline.mentions import FilledReason, L, R
from service.agent.offline.numbers import EN_COUNT_WORD, ZH_NUMERAL, count_word

MAX_GPUS_PER_NODE = 8  # HGX/DGX servers: 8 GPUs per node
DGX_GPUS = 8  # NVIDIA DGX/HGX A100, H100, H200, B200 systems: 8 GPUs each (NVIDIA DGX datasheets)

_NODES = rx.compile(
    rf"({ZH_NUMERAL}|\d+)\s*(?:台(?!\s*(?:nvidia\s*|rtx\s*)?(?:[abhltvp]\d|\d{{4}}))|个节点|节点|机)|{L}(\d+|{EN_COUNT_WORD})\s*(?:nodes?|machines?|servers?|hosts?){R}"
)
# "two 8-GPU nodes", "2 8xH100 nodes": the per-node count is inside the node phrase
_NODES_OF = rx.compile(
    rf"{L}(\d+|{EN_COUNT_WORD})\s+(\d{{1,2}})[\s\-]*(?:x\s*)?(?:gpus?|cards?|[a-z]*\d+[a-z]*s?)[\s\-]*(?:nodes?|machines?|servers?){R}"
)
# "2x8 H100", "2 x 8xA100", "2*8 GPUs": nodes x cards per node
_GRID = rx.compile(
    rf"{L}(\d{{1,2}})\s*[x×*]\s*(1|2|4|8|16)\s*(?:[x×*]\s*)?"
    r"(?=(?:nvidia\s*|rtx\s*|tesla\s*)?(?:[abhltvp]\d|mi\d|\d{4}|910|gpus?(?![a-z])|cards?(?![a-z])|卡))"
)
# "2 DGX H100", "a DGX A100", "两台 DGX": nodes of 8 GPUs (not the desk-side DGX Spark / Station)
_DGX = rx.compile(
    rf"(?:{L}(\d+|{EN_COUNT_WORD})\s*(?:x\s*)?|({ZH_NUMERAL}|\d+)\s*台\s*)?(?:nvidia\s*)?{L}[dh]gx{R}(?!\s*(?:spark|station))"
)
# "each" only next to the cards or the nodes ("8 A100s each", "each node has", "each with"): "8 samples each" is not
_PER_NODE = rx.compile(
    rf"(?:gpus?|cards?|\d{{2,4}}s?|[a-z]\d{{2,3}}s?|gb)\s*(?:each|apiece){R}|{L}each\s+(?:node|machine|server|host|with){R}"
    rf"|{L}per\s*(?:node|machine|server|host){R}|/\s*node|每(?:台|机|个?节点|个?服务器)"
)
_PER_NODE_COUNT = rx.compile(
    rf"每(?:台|机|个?节点|个?服务器)\s*({ZH_NUMERAL}|\d+)\s*(?:张|块|卡)"
    rf"|{L}(\d+)\s*(?:gpus?|cards?)\s*(?:each|apiece|per\s+(?:node|machine|server|host)){R}"
)
_TOTAL = rx.compile(
    rf"{L}(?:in\s+total|total(?:ly)?|altogether|across|spread\s+over|over\s+(?:\d+|{EN_COUNT_WORD})\s+(?:nodes|machines)){R}"
    r"|总共|一共|共计|合计|共\s*\d|分布在"
)


def _reason(nodes: int, total: int) -> FilledReason:
    return FilledReason(
        code="gpus_over_nodes", values={"nodes": nodes, "per_node": total // nodes, "total": total}
    )


def over_nodes(low: str, count: int | None) -> tuple[int | None, FilledReason | None]:
    """The job's GPU count, given the count `find_gpu` read next to the card; a reason when nodes were read."""
    dgx = _DGX.search(low)
    if dgx and count is None:
        nodes = count_word(next((g for g in dgx.groups() if g), "1")) or 1
        return nodes * DGX_GPUS, _reason(nodes, nodes * DGX_GPUS) if nodes > 1 else None
    grid = _GRID.search(low) or _NODES_OF.search(low)
    if grid:
        nodes, per_node = count_word(grid.group(1)), count_word(grid.group(2))
        if nodes and per_node and nodes > 1:
            return nodes * per_node, _reason(nodes, nodes * per_node)
    m = _NODES.search(low)
    nodes = count_word(next(g for g in m.groups() if g)) if m else None
    stated = _PER_NODE_COUNT.search(low)
    per_node = count_word(next(g for g in stated.groups() if g)) if stated else None
    if not nodes or nodes < 2 or not (count or per_node):
        return count, None
    if per_node:
        total = nodes * per_node
    elif count is None:
        return None, None
    elif _PER_NODE.search(low):
        total = nodes * count
    elif _TOTAL.search(low) or count > MAX_GPUS_PER_NODE:
        total = count
    else:
        total = nodes * count
    if total % nodes:
        return total, None  # "3 nodes, 16 GPUs": not an even split, the count as said
    return total, _reason(nodes, total)
