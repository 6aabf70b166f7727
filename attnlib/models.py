"""Published transformer configurations and what attention costs in them at full context.

:data:`MODEL_CONFIGS` lists the attention shapes of published models (layers, heads, key–value heads,
head width, maximum context), each with its source; :func:`attention_scale_table` turns them into the
scores and bytes one attention layer holds at that context. Key–value cache sizes:
:func:`attnlib.kvcache.kv_cache_bytes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from attnlib import _validation as _v
from attnlib._table import Table, format_bytes

__all__ = [
    "ModelConfig",
    "MODEL_CONFIGS",
    "ModelScale",
    "AttentionScaleTable",
    "attention_scale_table",
]


# --------------------------------------------------------------------------- published models
@dataclass(frozen=True)
class ModelConfig:
    """The attention shape of a published model.

    Attributes
    ----------
    name : str
    n_layers : int
        Transformer blocks, each with one self-attention.
    n_heads : int
        Query heads per layer (each makes its own ``n × n`` score matrix).
    d_model : int
        Width of the residual stream.
    d_head : int
        Width of one head's queries and keys (``d_k``).
    max_context : int
        Longest sequence, in tokens, the model was (pre-)trained on (``n``).
        For ViT-L/16 this is the pre-training resolution's 197 tokens; the
        model is fine-tuned at higher resolutions, with more patches.
    n_kv_heads : int
        Key/value heads; fewer than ``n_heads`` under grouped-query attention,
        which shrinks ``K`` and ``V`` but not the number of scores.
    citations : tuple of str
        BibTeX keys of the sources; the first is the model's paper.
    source : str
        Where each number is stated.
    """

    name: str
    n_layers: int
    n_heads: int
    d_model: int
    d_head: int
    max_context: int
    n_kv_heads: int
    citations: tuple[str, ...]
    source: str

    def __post_init__(self) -> None:
        for attr in ("n_layers", "n_heads", "d_model", "d_head", "max_context", "n_kv_heads"):
            _v.check_positive_int(getattr(self, attr), attr)
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"{self.name}: n_heads={self.n_heads} is not a multiple of n_kv_heads={self.n_kv_heads}"
            )
        if not self.citations:
            raise ValueError(f"{self.name}: citations must name at least one source")

    @property
    def citation(self) -> str:
        """The primary citation key (the model's paper)."""
        return self.citations[0]


#: Published configurations, each number as stated in the cited source.
#:
#: :meta hide-value:
MODEL_CONFIGS: tuple[ModelConfig, ...] = (
    # Radford et al. 2019, Table 2 (smallest model: 12 layers, d_model 768) and Sec. 2.3 (context
    # 1024 tokens); the 12 heads of 64 dims are GPT-1's (Radford et al. 2018, Sec. 4.1), which GPT-2
    # "largely follows".
    ModelConfig("GPT-2 small", 12, 12, 768, 64, 1024, 12,
                ("radford2019language", "radford2018improving"),
                "Radford et al. 2019, Table 2 and Sec. 2.3; heads from Radford et al. 2018, Sec. 4.1"),
    # Devlin et al. 2019, Sec. 3: BERT_BASE (L=12, H=768, A=12 in BERT's notation: 12 layers, hidden
    # size 768, 12 heads; H is not the number of heads here); pre-training inputs of at most
    # 512 tokens in total (Appendix A.2, "Pre-training Procedure").
    ModelConfig("BERT-base", 12, 12, 768, 64, 512, 12, ("devlin2019bert",),
                "Devlin et al. 2019, Sec. 3 (12 layers, hidden size 768, 12 heads) and Appendix A.2 "
                "(512 tokens)"),
    # Brown et al. 2020, Table 2.1, row GPT-3 175B: n_layers 96, d_model 12288, n_heads 96,
    # d_head 128; context window n_ctx = 2048 tokens for all models (Sec. 2.1).
    ModelConfig("GPT-3 175B", 96, 96, 12288, 128, 2048, 96, ("brown2020language",),
                "Brown et al. 2020, Table 2.1 and Sec. 2.1 (n_ctx = 2048)"),
    # Touvron et al. 2023b (Llama 2), Table 1: 70B has a 4k context and uses grouped-query attention
    # (also Sec. 2.2 and Appendix A.2.1). Layers, heads and width are those of LLaMA 65B (Touvron et
    # al. 2023a, Table 2: dimension 8192, 64 heads, 80 layers), whose architecture Llama 2 keeps;
    # the 8 key/value heads (groups of 8 query heads) are those of the released 70B checkpoint's
    # configuration (n_kv_heads = 8), which also confirms 80 layers, 64 heads and width 8192.
    ModelConfig("LLaMA-2 70B", 80, 64, 8192, 128, 4096, 8,
                ("touvron2023llama2", "touvron2023llama", "ainslie2023gqa"),
                "Touvron et al. 2023b, Table 1 (4k, GQA); sizes as Touvron et al. 2023a, Table 2; "
                "8 KV heads from the released checkpoint's configuration"),
    # Dosovitskiy et al. 2021, Table 1, ViT-Large: 24 layers, hidden size 1024, 16 heads. At the
    # 224 × 224 pre-training resolution with 16 × 16 patches: 14 · 14 = 196 patches + 1 class token.
    ModelConfig("ViT-L/16", 24, 16, 1024, 64, 197, 16, ("dosovitskiy2021image",),
                "Dosovitskiy et al. 2021, Table 1 and Sec. 3.1; 224² image, 16² patches, + [class]"),
    # Lin et al. 2023 (ESM-2), the table of ESM-2 model sizes in the supplementary material, 650M
    # model: 33 layers, embedding 1280, 20 heads (as in the released esm2_t33_650M_UR50D checkpoint);
    # trained on crops of at most 1024 tokens (supplementary Materials and Methods).
    ModelConfig("ESM-2 650M", 33, 20, 1280, 64, 1024, 20, ("lin2023esm2",),
                "Lin et al. 2023, supplementary ESM-2 size table; Materials and Methods (1024-token crops)"),
)


@dataclass(frozen=True)
class ModelScale:
    """One model's attention at its training context.

    Attributes
    ----------
    config : ModelConfig
    n : int
        Sequence length used (the model's ``max_context``).
    scores_per_layer : int
        ``n_heads · n²``: the entries of one layer's score tensor.
    scores_per_forward : int
        ``n_layers · n_heads · n²``: all layers of one forward pass.
    bytes_per_layer, bytes_per_forward : int
        The same, times ``dtype_bytes``: the memory if the tensors were
        materialised (batch size 1).
    """

    config: ModelConfig
    n: int
    scores_per_layer: int
    scores_per_forward: int
    bytes_per_layer: int
    bytes_per_forward: int


@dataclass(frozen=True)
class AttentionScaleTable:
    """Attention score counts and memory of published models; see :func:`attention_scale_table`.

    Attributes
    ----------
    rows : tuple of ModelScale
    dtype_bytes : int
        Bytes per score used for the memory columns.
    """

    rows: tuple[ModelScale, ...]
    dtype_bytes: int

    def row(self, name: str) -> ModelScale:
        """The row of the model called ``name``.

        Raises
        ------
        KeyError
            The table has no such model (the message lists the names).
        """
        for r in self.rows:
            if r.config.name == name:
                return r
        raise KeyError(f"no model {name!r}; the table has {[r.config.name for r in self.rows]}")

    def table(self, *, sources: bool = True) -> Table:
        """A plain-text table, one model per row.

        Columns: layers, query heads (and KV heads when fewer), ``d_head``,
        context ``n``, scores per layer (``n_heads·n²``), scores per forward
        pass (``× n_layers``), and the bytes of each at ``dtype_bytes`` per
        score, in binary units (1 GiB = 2³⁰ bytes).

        Parameters
        ----------
        sources : bool
            Add the ``source`` column and the notes (the default). ``False``
            leaves both out, for a text that cites the sources itself.

        Returns
        -------
        Table
            A ``str`` whose ``source`` column is each row's BibTeX key. In
            Jupyter and in the book it displays as an HTML table whose
            ``source`` column names the work as a reader cites it ("Brown et
            al. 2020", the start of ``source`` in :class:`ModelConfig`) and whose
            notes say where each number is stated (:class:`attnlib._table.Table`).

        Examples
        --------
        >>> print(attention_scale_table().table().splitlines()[0])
        attention scores at training context, batch 1, 2 bytes per score (binary units: 1 GiB = 2^30 B)
        """
        header = ("model", "layers", "heads", "d_head", "n", "scores/layer", "scores/forward",
                  "bytes/layer", "bytes/forward", "source")
        body = []
        for r in self.rows:
            c = r.config
            heads = f"{c.n_heads}" if c.n_kv_heads == c.n_heads else f"{c.n_heads} ({c.n_kv_heads} KV)"
            body.append((c.name, f"{c.n_layers}", heads, f"{c.d_head}", f"{r.n:,}",
                         f"{r.scores_per_layer:,}", f"{r.scores_per_forward:,}",
                         format_bytes(r.bytes_per_layer), format_bytes(r.bytes_per_forward), c.citation))
        widths = [max(len(h), *(len(row[i]) for row in body)) for i, h in enumerate(header)]
        left = {0, 9}

        def line(cells: Sequence[str]) -> str:
            pairs = enumerate(zip(cells, widths, strict=True))
            return "  ".join(f"{c:<{w}}" if i in left else f"{c:>{w}}" for i, (c, w) in pairs).rstrip()

        title = (f"attention scores at training context, batch 1, {self.dtype_bytes} bytes per score "
                 "(binary units: 1 GiB = 2^30 B)")
        shown = [(*row[:-1], _short_source(r.config)) for row, r in zip(body, self.rows, strict=True)]
        if not sources:
            bare_header, bare_body = header[:-1], [row[:-1] for row in body]
            widths = widths[:-1]
            return Table("\n".join([title, line(bare_header), *(line(row) for row in bare_body)]),
                         columns=bare_header, rows=[row[:-1] for row in shown], caption=title,
                         align=["left" if i in left else "right" for i in range(len(bare_header))])
        return Table("\n".join([title, line(header), *(line(row) for row in body)]),
                     columns=header, rows=shown, caption=title,
                     notes=[f"{r.config.name}: {r.config.source}" for r in self.rows],
                     align=["left" if i in left else "right" for i in range(len(header))])


def _short_source(config: ModelConfig) -> str:
    """The work a row cites, as the text cites it: ``"Brown et al. 2020"``, ``source`` up to a comma."""
    return config.source.split(",", 1)[0].strip()


def attention_scale_table(
    configs: Sequence[ModelConfig] = MODEL_CONFIGS, dtype_bytes: int = 2
) -> AttentionScaleTable:
    """Score counts and score-tensor memory of published models at their training context.

    For a model with ``L`` layers, ``H`` query heads and context ``n``, one
    layer's self-attention makes ``H · n²`` scores (one ``n × n`` matrix per
    head) and a forward pass ``L · H · n²``. The memory columns are those
    counts times ``dtype_bytes``: what the score tensors would occupy if they
    were materialised, at batch size 1 (a forward pass keeps all layers only
    when training stores them for the backward pass). Grouped-query attention
    (fewer KV heads) shares keys and values, not scores, so it changes nothing
    here.

    Parameters
    ----------
    configs : sequence of ModelConfig
        Defaults to :data:`MODEL_CONFIGS`.
    dtype_bytes : int
        Bytes per score: 2 for float16/bfloat16 (the default), 4 for float32.

    Returns
    -------
    AttentionScaleTable
        ``.rows`` (one :class:`ModelScale` per config), ``.row(name)`` and ``.table()``.

    Raises
    ------
    TypeError
        ``configs`` holds something other than :class:`ModelConfig`, or
        ``dtype_bytes`` is not an integer.
    ValueError
        ``configs`` is empty or ``dtype_bytes`` is not positive.

    Examples
    --------
    >>> t = attention_scale_table()
    >>> gpt3 = t.row("GPT-3 175B")
    >>> gpt3.scores_per_forward == 96 * 96 * 2048**2
    True
    >>> print(f"{gpt3.scores_per_forward:,} scores, {gpt3.bytes_per_forward / 2**30:.0f} GiB in float16")
    38,654,705,664 scores, 72 GiB in float16
    """
    dtype_bytes = _v.check_positive_int(dtype_bytes, "dtype_bytes")
    configs = tuple(configs)
    if not configs:
        raise ValueError("configs is empty; pass at least one ModelConfig (default: MODEL_CONFIGS)")
    rows = []
    for i, c in enumerate(configs):
        if not isinstance(c, ModelConfig):
            raise TypeError(f"configs[{i}] must be a ModelConfig; got {type(c).__name__}")
        n = c.max_context
        per_layer = c.n_heads * n * n
        per_forward = c.n_layers * per_layer
        rows.append(
            ModelScale(c, n, per_layer, per_forward, per_layer * dtype_bytes, per_forward * dtype_bytes)
        )
    return AttentionScaleTable(tuple(rows), dtype_bytes)
