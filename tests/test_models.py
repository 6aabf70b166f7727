"""Tests of attnlib.models: the published configurations and the model-scale table.

1. The configurations are the published numbers; rows worked out by hand.
2. The table renders one line per model and cites works by name in HTML.
3. A catalogue of bad inputs, each checked for its type and message.
"""


import pytest

from attnlib.models import (
    MODEL_CONFIGS,
    AttentionScaleTable,
    ModelConfig,
    attention_scale_table,
)


# --------------------------------------------------------------------------- published models
def test_gpt3_row_is_96_layers_times_96_heads_times_2048_squared():
    row = attention_scale_table().row("GPT-3 175B")
    assert row.n == 2048
    assert row.scores_per_layer == 96 * 2048**2
    assert row.scores_per_forward == 96 * 96 * 2048**2 == 38_654_705_664
    assert row.bytes_per_forward == 2 * 96 * 96 * 2048**2
    assert row.bytes_per_forward == 72 * 2**30


def test_hand_checked_rows():
    t = attention_scale_table(dtype_bytes=4)
    assert isinstance(t, AttentionScaleTable)
    gpt2 = t.row("GPT-2 small")
    assert gpt2.scores_per_layer == 12 * 1024**2 == 12_582_912
    assert gpt2.scores_per_forward == 12 * 12 * 1024**2
    assert gpt2.bytes_per_layer == 48 * 2**20  # float32: 48 MiB per layer
    assert t.row("BERT-base").scores_per_forward == 12 * 12 * 512**2
    llama = t.row("LLaMA-2 70B")
    assert llama.scores_per_forward == 80 * 64 * 4096**2  # 64 query heads, GQA does not shrink scores
    assert llama.config.n_kv_heads == 8
    vit = t.row("ViT-L/16")
    assert vit.n == (224 // 16) ** 2 + 1 == 197
    assert vit.scores_per_forward == 24 * 16 * 197**2
    assert t.row("ESM-2 650M").scores_per_forward == 33 * 20 * 1024**2


def test_model_configs_are_the_published_numbers():
    got = {c.name: (c.n_layers, c.n_heads, c.d_model, c.d_head, c.max_context, c.n_kv_heads)
           for c in MODEL_CONFIGS}
    assert got == {
        "GPT-2 small": (12, 12, 768, 64, 1024, 12),
        "BERT-base": (12, 12, 768, 64, 512, 12),
        "GPT-3 175B": (96, 96, 12288, 128, 2048, 96),
        "LLaMA-2 70B": (80, 64, 8192, 128, 4096, 8),
        "ViT-L/16": (24, 16, 1024, 64, 197, 16),
        "ESM-2 650M": (33, 20, 1280, 64, 1024, 20),
    }
    for c in MODEL_CONFIGS:
        assert c.n_heads * c.d_head == c.d_model, c.name
        assert c.citation == c.citations[0] and c.source
        # The book writes H for the number of heads; BERT's "H=768" (its hidden size) would misread.
        assert "H=" not in c.source and "A=" not in c.source, c.name


def test_scale_table_renders_one_line_per_model():
    t = attention_scale_table()
    lines = t.table().splitlines()
    assert len(lines) == 2 + len(MODEL_CONFIGS)
    gpt3 = next(line for line in lines if line.startswith("GPT-3 175B"))
    assert "38,654,705,664" in gpt3 and "72 GiB" in gpt3 and "brown2020language" in gpt3
    assert "64 (8 KV)" in next(line for line in lines if line.startswith("LLaMA-2"))
    with pytest.raises(KeyError, match=r"no model 'GPT-5'.*'GPT-3 175B'"):
        t.row("GPT-5")


# --------------------------------------------------------------------------- the table as HTML
def test_models_table_cites_works_by_name_in_html_and_says_where_each_number_is():
    t = attention_scale_table().table()
    assert "brown2020language" in t  # the text keeps the BibTeX keys (as printed before)
    html = t._repr_html_()
    for c in MODEL_CONFIGS:
        assert c.citation not in html, c.citation  # no BibTeX key reaches a reader of the HTML
        assert f"{c.name}: {c.source}".replace("'", "&#x27;") in html
    sources = [row[-1] for row in t.rows]
    assert sources == ["Radford et al. 2019", "Devlin et al. 2019", "Brown et al. 2020",
                       "Touvron et al. 2023b", "Dosovitskiy et al. 2021", "Lin et al. 2023"]
    assert t.align[0] == "left" and t.align[-1] == "left" and set(t.align[1:-1]) == {"right"}


def test_scale_table_without_sources_has_no_source_column_and_no_notes():
    two = [c for c in MODEL_CONFIGS if c.name in ("GPT-2 small", "GPT-3 175B")]
    t = attention_scale_table(two).table(sources=False)
    assert t.columns[-1] == "bytes/forward" and not t.notes and len(t.align) == len(t.columns)
    assert all(len(row) == len(t.columns) for row in t.rows)
    for c in two:
        assert c.citation not in t and c.citation not in t._repr_html_()
        assert c.source.split(",")[0] not in t._repr_html_()  # "Brown et al. 2020"
    assert t.splitlines()[3].endswith("72 GiB")  # the numbers stay
    assert attention_scale_table(two).table().splitlines()[1:] != t.splitlines()[1:]


# --------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: attention_scale_table(dtype_bytes=0), ValueError, r"dtype_bytes must be positive; got 0"),
        (lambda: attention_scale_table(()), ValueError, r"configs is empty"),
        (lambda: attention_scale_table(["GPT-3"]), TypeError, r"configs\[0\] must be a ModelConfig; got str"),
        (lambda: ModelConfig("bad", 2, 6, 384, 64, 128, 4, ("k",), "s"), ValueError,
         r"bad: n_heads=6 is not a multiple of n_kv_heads=4"),
        (lambda: ModelConfig("bad", 0, 6, 384, 64, 128, 6, ("k",), "s"), ValueError,
         r"n_layers must be positive; got 0"),
    ],
)
def test_bad_input_raises_a_message_naming_it(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
