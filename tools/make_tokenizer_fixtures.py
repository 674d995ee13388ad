#!/usr/bin/env python3
"""Build tiny Hugging Face tokenizers and golden encodings for ctxpar's tokenizer tests.

This is the `tokenizers` oracle for the tokenizer layer. For each configuration below it
trains a small BPE (vocabulary 500-2000) with the pre-tokenizer, normalizer, post-processor
and decoder settings of a real model family, and writes under tests/fixtures/tokenizers/:

    <name>/tokenizer.json          as `tokenizers` serializes it (some edited, see below)
    <name>/tokenizer_config.json   bos/eos tokens, add_bos_token/add_eos_token, chat template
    <name>/generation_config.json  where the model family has one (EOS ids, sampling defaults)
    <name>/chat_template.jinja     where the family ships the template as its own file
    <name>/golden.json             encodings, decodings and id_to_token computed by `tokenizers`

The C++ tests read only these files; CI never needs Python.

Fixtures
    gpt2          ByteLevel(use_regex) pre-tokenizer and decoder, ByteLevel post-processor;
                  merges written in the legacy "a b" form; a pad_token that only
                  tokenizer_config.json names (added as a special token)
    roberta       ByteLevel(add_prefix_space) + RobertaProcessing; <mask> with lstrip
    llama3        Split(Llama-3 regex, Isolated) + ByteLevel(use_regex false), ignore_merges,
                  Sequence[ByteLevel, TemplateProcessing(BOS)]; generation_config with 3 EOS
    qwen2         NFC + Split(Qwen2 regex) + ByteLevel, ByteLevel post-processor, normal
                  (non-special) added tokens, chat_template as a list of named templates;
                  merges written in the legacy form
    deepseek_v3   empty normalizer Sequence, the three DeepSeek-V3 Splits (digits, CJK
                  ranges, words/punctuation) + ByteLevel, TemplateProcessing(BOS);
                  tokenizer_config as LlamaTokenizerFast with AddedToken dicts
    llama2        SentencePiece style (legacy): Prepend("▁") + Replace(" ", "▁") normalizer,
                  no pre-tokenizer, byte_fallback + fuse_unk, Llama-2 decoder chain
    mistral       SentencePiece style: Metaspace(prepend_scheme first, split false), no
                  post-processor in tokenizer.json: LlamaTokenizerFast with add_bos_token and
                  add_eos_token in tokenizer_config.json rebuilds it (BOS and EOS)
    wordpiece_like NFKC + Lowercase + Replace(regex) + Strip normalizers; Digits(individual),
                  Punctuation, Metaspace(always, split) pre-tokenizers; unk + fuse_unk without
                  byte fallback; BertProcessing; added tokens with every flag
    splits        Split with every behavior (String and Regex patterns, invert), Digits,
                  Whitespace, ByteLevel(add_prefix_space, no regex); NFD normalizer
    splits_spm    Split(invert) + WhitespaceSplit + Metaspace(first, split true) after other
                  splits, byte fallback, decoders Replace(regex)/ByteFallback/Metaspace/Strip

golden.json schema
    encode    [{text | bytes_hex, ids, ids_no_special, decoded, decoded_with_special}]: ids =
              encode(text, add_special_tokens=true) after the tokenizer_config rewrite below,
              ids_no_special = encode(text, false), decoded(_with_special) = decode(ids,
              skip_special_tokens=true (false)). bytes_hex cases are invalid UTF-8: the expected ids are those of
              bytes.decode("utf-8", "replace") (every maximal invalid subsequence becomes
              U+FFFD, as Rust's from_utf8_lossy does); Python str cannot hold such bytes.
    decode    [{ids, text, text_with_special}]: decode(ids, skip_special_tokens=true/false) of
              random id sequences (random vocabulary ids, added tokens, split byte-fallback
              sequences)
    id_to_token  [[id, token or null], ...] for a sample of ids, out-of-range ones included
    vocab_size   largest id + 1
    config    bos_token, eos_token, bos_token_id, eos_token_id, add_bos_token, add_eos_token,
              generation eos ids, chat template names, as transformers reads them

tokenizer_config.json rewrite (what transformers 4.x LlamaTokenizerFast does, and so what
vLLM serves for those models): for tokenizer_class LlamaTokenizer(Fast), CodeLlamaTokenizer(Fast)
or GemmaTokenizer(Fast) the post-processor becomes TemplateProcessing("[bos:0] $A:0 [eos:0]")
from add_bos_token (default true) and add_eos_token (default false). Other classes keep
tokenizer.json's post-processor. (transformers 5.x ignores both flags whenever tokenizer.json
exists; for the real Llama-2, Mistral and DeepSeek files both readings give the same ids.)
Named special tokens of the config (bos, eos, unk, sep, pad, cls, mask) that tokenizer.json
does not list are added as special tokens, as transformers does. The script checks all this
against transformers' AutoTokenizer wherever the fixture's tokenizer_class is the generic
PreTrainedTokenizerFast.

Versions (pinned in tools/requirements-tokenizer-fixtures.txt): tokenizers 0.23.3,
transformers 5.24.0 (only for the cross-check).

How to run (never install into the repository):
    python3.11 -m venv /tmp/tok-venv
    /tmp/tok-venv/bin/pip install -r tools/requirements-tokenizer-fixtures.txt
    /tmp/tok-venv/bin/python tools/make_tokenizer_fixtures.py [--out tests/fixtures/tokenizers]
"""

import argparse
import json
import os
import random
import shutil
import tempfile

from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                        pre_tokenizers, processors, trainers)

SEED = 1234

# The real models' Split regexes (checked against the tokenizer.json files of
# meta-llama/Llama-3.1-8B, Qwen/Qwen2.5-7B and deepseek-ai/DeepSeek-V3).
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
         r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
DS1 = r"\p{N}{1,3}"
DS2 = r"[一-龥぀-ゟ゠-ヿ]+"
DS3 = (r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|"
       r" ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

ENGLISH = """The quick brown fox jumps over the lazy dog. Decode context parallelism shards
the key-value cache of a tensor-parallel group along the sequence, so no rank stores a token
that another rank of its group also stores. Attention is computed per shard and the partial
results are merged exactly with their log-sum-exp. It's what they'll want; we've seen it, I'm
sure, and they'd agree. Isn't it? THE MODEL SERVES LLAMA, QWEN AND DEEPSEEK CHECKPOINTS.
Numbers: 1, 22, 333, 4444, 55555, 3.14159, 2,718,281 and 1e-5. Email: someone@example.com,
path /usr/local/bin, URL https://example.org/a?b=c&d=e#f."""

CODE = """def merge(partials):
    m = max(lse for _, lse in partials)
    total = sum(math.exp(lse - m) for _, lse in partials)
    return m + math.log(total)

for (int i = 0; i < n; ++i) {
\tif (a[i] != b[i] && !done) { out += a[i] * 2; }
}
#include <vector>
std::vector<int32_t> ids = tokenizer.encode("hello", /*add_special_tokens=*/true);
"""

MULTILINGUAL = """你好，世界！今天天气很好。我们在测试分词器。
日本語のテキストです。ひらがなとカタカナ、漢字を混ぜます。
한국어 문장입니다. 토크나이저를 시험합니다.
مرحبا بالعالم، كيف حالك اليوم؟ الأرقام ١٢٣٤٥.
Привет, мир! Это проверка токенизатора.
Γειά σου κόσμε. Ελληνικά γράμματα ΣΑΣ.
नमस्ते दुनिया, यह एक परीक्षण है।
café naïve résumé Straße İstanbul ǅemal Ωmega
"""

EMOJI = "👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 🙂🙃 🇩🇪 ✔︎ 🧑🏿‍💻"


def training_corpus():
    rng = random.Random(SEED)
    syllables = ["ka", "ri", "to", "ne", "shi", "la", "mo", "vu", "de", "qua", "str", "pre",
                 "tion", "ing", "er", "ed", "ly", "ment", "un", "re"]
    lines = [ENGLISH, CODE, MULTILINGUAL, EMOJI] * 4
    for _ in range(400):
        words = []
        for _ in range(rng.randint(3, 12)):
            w = "".join(rng.choice(syllables) for _ in range(rng.randint(1, 4)))
            if rng.random() < 0.15:
                w = w.capitalize()
            if rng.random() < 0.1:
                w += rng.choice([",", ".", "!", "?", ";", ":"])
            if rng.random() < 0.1:
                w = str(rng.randint(0, 99999))
            words.append(w)
        lines.append(" ".join(words))
    return lines


def english_corpus():
    """SentencePiece-style fixtures are trained without CJK and emoji, so those reach the
    byte fallback."""
    return [l for l in training_corpus() if l not in (MULTILINGUAL, EMOJI)]


def test_corpus(added_contents):
    rng = random.Random(SEED + 1)
    texts = [
        "",
        "Hello world",
        " Hello  world ",
        "hello",
        "  ",
        "\n",
        "The quick brown fox jumps over the lazy dog. It's 12:45 — isn't it? I'm sure they'll've done it.",
        "IT'S I'LL WE'VE THEY'D YOU'RE 'S 'T",
        CODE,
        "你好，世界！日本語のテキスト、カタカナ。한국어 문장입니다.",
        "中文和English混合123测试",
        "مرحبا بالعالم، كيف حالك؟ ١٢٣",
        EMOJI,
        "e\u0301 cafe\u0301 n\u0303 \u1e9b\u0323 \u00c5 A\u030a \u212b",
        "a" + " " * 40 + "b\n\n\n\n   \n\t\t c\r\n\r\n" + "\n" * 20 + "end   ",
        "1234567890 3.14159 1,000,000 ٣٤٥ ⅷ ²³ 0x1F",
        "a\u00a0b\u2009c\u3000d\u0085e\u180ef\u200bg\ufeffh\u2028i\u000bj\u000ck",
        "ﬁﬂ ① ｆｕｌｌｗｉｄｔｈ Ⅻ ㎏ ½ ℌ ﹏",
        "İstanbul ıi KELVIN \u212a ΣΑΣ Straße ǅ",
        "<<>> <0x41> ▁▁ ▁hello Ġworld âĢĶ",
        "tab\there  double  space   triple\n\nnewlines\r\rreturns",
        "- -- --- a-b-c 1-2 x,y;z Abc DeF",
        "aeiou xyz queue AEIOU bcd",
        ENGLISH,
        MULTILINGUAL,
    ]
    # Special and added tokens inside text, at the edges, adjacent, with spaces around.
    for c in added_contents[:8]:
        texts.append(f"x{c}y {c} {c}{c}z")
        texts.append(f"{c}hello")
        texts.append(f"hello  {c}  world{c}")
    if len(added_contents) >= 2:
        texts.append(" ".join(added_contents))
        texts.append("".join(added_contents))
    # Random mixtures of every class of character above.
    pool = list(set("".join(texts))) + ["\U0001F600", "\u0301", "\u200d", "\ufffd"]
    pool.sort()
    for _ in range(12):
        n = rng.randint(1, 60)
        texts.append("".join(rng.choice(pool) for _ in range(n)))
    for _ in range(4):
        n = rng.randint(1, 12)
        texts.append(" ".join(rng.choice(added_contents + ["a", " ", "b c", "\n"])
                              for _ in range(n)) if added_contents else "a b")
    # A long mixed text (a few KB), so long words and the pre-token cache are exercised.
    long = []
    for _ in range(30):
        long.append(rng.choice([ENGLISH, CODE, MULTILINGUAL, EMOJI]))
    texts.append("".join(long)[:4000])
    texts.append("x" * 700)
    texts.append("ab" * 300 + " " + "\u4e00" * 300)
    return texts


INVALID_UTF8 = [
    b"abc\xff\xfedef",
    b"\xe4\xbd",
    b"\xe4\xbd\xa0\xe5",
    b"\xc0\xaf",
    b"\xed\xa0\x80 surrogate",
    b"\xf4\x90\x80\x80 too big",
    b"hi\x80\x80\x80there",
    b"\xe2\x82\xe2\x82\xac",
    b"\xf0\x9f\x98",
    b"\xff",
]


def train_bpe(tok, corpus, vocab_size, special_tokens, byte_level=True, **kw):
    alphabet = pre_tokenizers.ByteLevel.alphabet() if byte_level else []
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special_tokens,
                                  initial_alphabet=alphabet, show_progress=False, **kw)
    tok.train_from_iterator(corpus, trainer)
    return tok


def model_json(tok):
    return json.loads(tok.to_str())["model"]


def legacy_merges(j):
    """Rewrite merges as "a b" strings (the form older tokenizers wrote)."""
    merges = j["model"]["merges"]
    assert all(" " not in a and " " not in b for a, b in merges)
    j["model"]["merges"] = [f"{a} {b}" for a, b in merges]
    return j


# ---------------------------------------------------------------------------------------
# The fixtures. Each returns (tokenizer.json dict, tokenizer_config dict, generation_config
# dict or None, chat_template.jinja text or None).

CHAT_TEMPLATE = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
                 "message['content'] + '<|im_end|>\\n' }}{% endfor %}"
                 "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def gpt2():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    train_bpe(tok, training_corpus(), 1000, ["<|endoftext|>"])
    j = legacy_merges(json.loads(tok.to_str()))
    # <|pad|> is not in tokenizer.json: transformers adds it as a special token.
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|endoftext|>",
              "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
              "pad_token": "<|pad|>", "model_max_length": 1024}
    return j, config, None, None


def roberta():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    train_bpe(tok, training_corpus(), 800, ["<s>", "<pad>", "</s>", "<unk>"])
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, normalized=False, special=True)])
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")),
                                                      ("<s>", tok.token_to_id("<s>")))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>",
              "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
              "mask_token": "<mask>"}
    return json.loads(tok.to_str()), config, None, None


LLAMA3_SPECIAL = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                  "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>",
                  "<|python_tag|>"]


def llama3():
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    train_bpe(tok, training_corpus(), 1200, [])
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True)
                            for t in LLAMA3_SPECIAL])
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
        processors.TemplateProcessing(
            single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|>:1 $B:1",
            special_tokens=[("<|begin_of_text|>", bos)]),
    ])
    j = json.loads(tok.to_str())
    assert j["model"]["ignore_merges"] is True
    template = ("{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + "
                "message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
                "'<|eot_id|>' }}{%- endfor %}{%- if add_generation_prompt %}{{- "
                "'<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}")
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|begin_of_text|>",
              "eos_token": "<|eot_id|>", "chat_template": template,
              "model_input_names": ["input_ids", "attention_mask"]}
    generation = {"bos_token_id": bos,
                  "eos_token_id": [tok.token_to_id(t) for t in
                                   ("<|end_of_text|>", "<|eom_id|>", "<|eot_id|>")],
                  "do_sample": True, "temperature": 0.6, "top_p": 0.9,
                  "transformers_version": "4.45.0"}
    return j, config, generation, None


def qwen2():
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False,
                                              use_regex=False)
    train_bpe(tok, training_corpus(), 1100, [])
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True)
                            for t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>")])
    tok.add_tokens([AddedToken(t, normalized=False, special=False)
                    for t in ("<tool_call>", "</tool_call>")])
    j = legacy_merges(json.loads(tok.to_str()))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": None,
              "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
              "chat_template": [{"name": "default", "template": CHAT_TEMPLATE},
                                {"name": "tool_use",
                                 "template": "{{ tools | tojson }}" + CHAT_TEMPLATE}],
              "errors": "replace", "split_special_tokens": False}
    generation = {"bos_token_id": tok.token_to_id("<|endoftext|>"),
                  "eos_token_id": [tok.token_to_id("<|im_end|>"),
                                   tok.token_to_id("<|endoftext|>")],
                  "pad_token_id": tok.token_to_id("<|endoftext|>"), "do_sample": True,
                  "temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05,
                  "min_p": 0.0, "max_new_tokens": 2048}
    return j, config, generation, None


DS_BOS = "<｜begin▁of▁sentence｜>"
DS_EOS = "<｜end▁of▁sentence｜>"


def deepseek_v3():
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(DS1), behavior="isolated", invert=False),
        pre_tokenizers.Split(Regex(DS2), behavior="isolated", invert=False),
        pre_tokenizers.Split(Regex(DS3), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    train_bpe(tok, training_corpus(), 1300, [DS_BOS, DS_EOS, "<｜▁pad▁｜>"])
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True)
                            for t in ("<｜User｜>", "<｜Assistant｜>", "<think>", "</think>")])
    tok.add_tokens([AddedToken("<｜tool▁call▁begin｜>", normalized=False, special=False)])
    bos = tok.token_to_id(DS_BOS)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{DS_BOS}:0 $A:0", pair=f"{DS_BOS}:0 $A:0 {DS_BOS}:1 $B:1",
        special_tokens=[(DS_BOS, bos)])

    def added(content):
        return {"__type": "AddedToken", "content": content, "lstrip": False,
                "normalized": True, "rstrip": False, "single_word": False}

    config = {"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": True,
              "add_eos_token": False, "bos_token": added(DS_BOS), "eos_token": added(DS_EOS),
              "pad_token": added(DS_EOS), "legacy": True, "model_max_length": 131072,
              "clean_up_tokenization_spaces": False, "unk_token": None}
    generation = {"bos_token_id": bos, "eos_token_id": tok.token_to_id(DS_EOS),
                  "do_sample": True, "temperature": 0.6, "top_p": 0.95}
    template = ("{% if not add_generation_prompt is defined %}{% set add_generation_prompt = "
                "false %}{% endif %}{{ bos_token }}{% for message in messages %}{% if "
                "message['role'] == 'user' %}{{ '<｜User｜>' + message['content'] }}{% else %}"
                "{{ '<｜Assistant｜>' + message['content'] + '<｜end▁of▁sentence｜>' }}{% endif %}"
                "{% endfor %}{% if add_generation_prompt %}{{ '<｜Assistant｜>' }}{% endif %}")
    return json.loads(tok.to_str()), config, generation, template


BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]


def spm_model(corpus, vocab_size, pre_tokenizer, normalizer=None):
    """Trains a SentencePiece-like BPE and inserts the 256 byte tokens after <unk>, <s>,
    </s>, as Llama-2's vocabulary has them (ids 3..258)."""
    tok = Tokenizer(models.BPE())
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    train_bpe(tok, corpus, vocab_size, [], byte_level=False, limit_alphabet=120)
    m = model_json(tok)
    ordered = sorted(m["vocab"].items(), key=lambda kv: kv[1])
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in BYTE_TOKENS:
        vocab[b] = len(vocab)
    for t, _ in ordered:
        if t not in vocab:
            vocab[t] = len(vocab)
    merges = [tuple(x) for x in m["merges"]]
    return vocab, merges


def llama2():
    vocab, merges = spm_model(english_corpus(), 900,
                              pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always",
                                                       split=True))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True,
                               byte_fallback=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                           normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(content=" ", left=1)])
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True)
                            for t in ("<unk>", "<s>", "</s>")])
    tok.post_processor = processors.TemplateProcessing(
        single="<s>:0 $A:0", pair="<s>:0 $A:0 <s>:1 $B:1", special_tokens=[("<s>", 1)])
    config = {"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": True,
              "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>",
              "unk_token": "<unk>", "legacy": True, "chat_template": CHAT_TEMPLATE}
    generation = {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0,
                  "temperature": 0.6, "top_p": 0.9, "max_length": 4096}
    return json.loads(tok.to_str()), config, generation, None


def mistral():
    metaspace = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    vocab, merges = spm_model(english_corpus(), 1000,
                              pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always",
                                                       split=True))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True,
                               byte_fallback=True))
    tok.pre_tokenizer = metaspace
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(content=" ", left=1)])
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True)
                            for t in ("<unk>", "<s>", "</s>", "[INST]", "[/INST]")])
    # A normal added token matched in the normalized text (Metaspace runs after matching).
    tok.add_tokens([AddedToken("tokenizer", normalized=True, special=False)])
    j = json.loads(tok.to_str())
    assert j["post_processor"] is None
    config = {"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": True,
              "add_eos_token": True, "bos_token": "<s>", "eos_token": "</s>",
              "unk_token": "<unk>", "legacy": False}
    return j, config, None, None


def wordpiece_like():
    tok = Tokenizer(models.BPE(unk_token="[UNK]", fuse_unk=True))
    tok.normalizer = normalizers.Sequence([
        normalizers.NFKC(), normalizers.Lowercase(),
        normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip(left=True, right=True)])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.Punctuation(behavior="isolated"),
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True),
    ])
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    train_bpe(tok, english_corpus(), 700, ["[UNK]", "[CLS]", "[SEP]", "[PAD]"],
              byte_level=False, limit_alphabet=60)
    tok.add_special_tokens([AddedToken("[MASK]", lstrip=True, rstrip=True, normalized=False,
                                       special=True)])
    tok.add_tokens([
        AddedToken("<word>", single_word=True, normalized=False, special=False),
        AddedToken("<l>", lstrip=True, normalized=False, special=False),
        AddedToken("<r>", rstrip=True, normalized=False, special=False),
        AddedToken("Hello", normalized=True, special=False),  # matches "hello" after Lowercase
        AddedToken("<N>", normalized=False, special=False),
        AddedToken("Special Word", normalized=True, special=True, single_word=True),
    ])
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")),
                                                   ("[CLS]", tok.token_to_id("[CLS]")))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]",
              "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
              "mask_token": "[MASK]", "do_lower_case": True}
    return json.loads(tok.to_str()), config, None, None


def splits():
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFD()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split("-", behavior="merged_with_previous"),
        pre_tokenizers.Split(Regex("[,;]"), behavior="removed"),
        pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.Split(Regex("[A-Z]"), behavior="merged_with_next"),
        pre_tokenizers.Split(Regex("[aeiou]{2,}"), behavior="contiguous"),
        pre_tokenizers.Whitespace(),
        pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    train_bpe(tok, training_corpus(), 900, ["<pad>"])
    tok.add_special_tokens([AddedToken("<sep>", normalized=False, special=True)])
    return json.loads(tok.to_str()), {"tokenizer_class": "PreTrainedTokenizerFast"}, None, None


def splits_spm():
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"[^\s\p{P}]+"), behavior="isolated", invert=True),
        pre_tokenizers.Split("  ", behavior="merged_with_next"),
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True),
    ])
    vocab, merges = spm_model(english_corpus(), 700, pre)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=False,
                               byte_fallback=True))
    tok.normalizer = normalizers.Sequence([normalizers.Strip(left=True, right=False),
                                           normalizers.NFKD()])
    tok.pre_tokenizer = pre
    tok.decoder = decoders.Sequence([
        decoders.Replace(Regex("▁+"), "▁"), decoders.ByteFallback(),
        decoders.Metaspace(replacement="▁", prepend_scheme="first", split=True),
        decoders.Strip(content="x", left=1, right=0)])
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True)
                            for t in ("<unk>", "<s>", "</s>")])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> $B:1 </s>:1",
        special_tokens=[("<s>", 1), ("</s>", 2)])
    return json.loads(tok.to_str()), {"tokenizer_class": "PreTrainedTokenizerFast"}, None, None


FIXTURES = {
    "gpt2": gpt2, "roberta": roberta, "llama3": llama3, "qwen2": qwen2,
    "deepseek_v3": deepseek_v3, "llama2": llama2, "mistral": mistral,
    "wordpiece_like": wordpiece_like, "splits": splits, "splits_spm": splits_spm,
}


# ---------------------------------------------------------------------------------------
# transformers' reading of tokenizer_config.json, as ctxpar reproduces it.

def token_content(value):
    if value is None:
        return None
    if isinstance(value, dict):
        return value["content"]
    return value


LLAMA_CLASSES = {"LlamaTokenizer", "LlamaTokenizerFast", "CodeLlamaTokenizer",
                 "CodeLlamaTokenizerFast", "GemmaTokenizer", "GemmaTokenizerFast"}


def apply_config(tok, config):
    """The special tokens transformers adds to the backend and LlamaTokenizerFast's
    post-processor rewrite (update_post_processor). Returns bos, eos and the add flags."""
    names = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
             "mask_token"]
    present = {t.content for t in tok.get_added_tokens_decoder().values()}
    to_add = []
    for name in names:
        v = config.get(name)
        if v is None:
            continue
        content = token_content(v)
        if content in present:
            continue
        if isinstance(v, dict):
            to_add.append(AddedToken(content, single_word=v.get("single_word", False),
                                     lstrip=v.get("lstrip", False),
                                     rstrip=v.get("rstrip", False),
                                     normalized=v.get("normalized", False), special=True))
        else:
            to_add.append(AddedToken(content, special=True, normalized=False))
        present.add(content)
    if to_add:
        tok.add_special_tokens(to_add)
    bos, eos = token_content(config.get("bos_token")), token_content(config.get("eos_token"))
    add_bos = add_eos = False
    if config.get("tokenizer_class") in LLAMA_CLASSES:
        add_bos = bool(config.get("add_bos_token", True))
        add_eos = bool(config.get("add_eos_token", False))
        assert bos is not None or not add_bos
        assert eos is not None or not add_eos
        single = (f"{bos}:0 " if add_bos else "") + "$A:0" + (f" {eos}:0" if add_eos else "")
        pair = (single + (f" {bos}:1" if add_bos else "") + " $B:1" +
                (f" {eos}:1" if add_eos else ""))
        special = []
        if add_bos:
            special.append((bos, tok.token_to_id(bos)))
        if add_eos:
            special.append((eos, tok.token_to_id(eos)))
        tok.post_processor = processors.TemplateProcessing(single=single, pair=pair,
                                                           special_tokens=special)
    return bos, eos, add_bos, add_eos


def goldens(tok_json, config, generation, template):
    tok = Tokenizer.from_str(json.dumps(tok_json))
    bos, eos, add_bos, add_eos = apply_config(tok, config)
    added = [t.content for _, t in sorted(tok.get_added_tokens_decoder().items())]
    encode, decode = [], []
    for text in test_corpus(added):
        e = tok.encode(text, add_special_tokens=True).ids
        n = tok.encode(text, add_special_tokens=False).ids
        encode.append({"text": text, "ids": e, "ids_no_special": n})
    for raw in INVALID_UTF8:
        text = raw.decode("utf-8", "replace")
        encode.append({"bytes_hex": raw.hex(),
                       "ids": tok.encode(text, add_special_tokens=True).ids,
                       "ids_no_special": tok.encode(text, add_special_tokens=False).ids})
    vocab_size = max(tok.get_vocab(with_added_tokens=True).values()) + 1
    rng = random.Random(SEED + 2)
    for c in encode:
        c["decoded"] = tok.decode(c["ids"], skip_special_tokens=True)
        c["decoded_with_special"] = tok.decode(c["ids"], skip_special_tokens=False)
    id_lists = []
    byte_ids = [i for i in (tok.token_to_id(b) for b in BYTE_TOKENS) if i is not None]
    added_ids = sorted(tok.get_added_tokens_decoder().keys())
    for _ in range(30):
        n = rng.randint(1, 25)
        id_lists.append([rng.randrange(vocab_size) for _ in range(n)])
    for _ in range(10):
        n = rng.randint(1, 12)
        id_lists.append([rng.choice(added_ids + [rng.randrange(vocab_size)]) for _ in range(n)])
    if byte_ids:
        # Split UTF-8 sequences of byte-fallback tokens, complete and incomplete.
        for s in ["é", "你好", "👍🏽", "a€b"]:
            ids = [tok.token_to_id(f"<0x{b:02X}>") for b in s.encode()]
            id_lists.append(ids)
            id_lists.append(ids[:-1])
            id_lists.append(ids[1:] + ids)
    for ids in id_lists:
        decode.append({"ids": ids, "text": tok.decode(ids, skip_special_tokens=True),
                       "text_with_special": tok.decode(ids, skip_special_tokens=False)})
    sample = sorted(set(rng.sample(range(vocab_size), min(60, vocab_size)) + added_ids +
                        [0, vocab_size - 1]))
    id_to_token = [[i, tok.id_to_token(i)] for i in sample]
    id_to_token += [[vocab_size, None], [vocab_size + 1000, None]]
    templates = config.get("chat_template")
    names = []
    if isinstance(templates, str):
        names = ["default"]
    elif isinstance(templates, list):
        names = [t["name"] for t in templates]
    if template is not None and not names:
        names = ["default"]
    gen_eos = []
    if generation is not None:
        g = generation.get("eos_token_id")
        gen_eos = [g] if isinstance(g, int) else list(g or [])
    cfg = {"bos_token": bos, "eos_token": eos,
           "bos_token_id": tok.token_to_id(bos) if bos else None,
           "eos_token_id": tok.token_to_id(eos) if eos else None,
           "add_bos_token": add_bos, "add_eos_token": add_eos,
           "generation_eos_token_ids": gen_eos, "chat_template_names": names}
    return {"encode": encode, "decode": decode, "id_to_token": id_to_token,
            "vocab_size": vocab_size, "config": cfg}, tok


def check_with_transformers(directory, golden):
    """transformers' AutoTokenizer must give the same ids (generic tokenizer class only)."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        print("  transformers not installed: cross-check skipped")
        return
    at = AutoTokenizer.from_pretrained(directory)
    for case in golden["encode"]:
        if "text" not in case:
            continue
        got = at.encode(case["text"], add_special_tokens=True)
        assert got == case["ids"], (directory, case["text"], got, case["ids"])
        got = at.encode(case["text"], add_special_tokens=False)
        assert got == case["ids_no_special"], (directory, case["text"])
    for case in golden["decode"][:40]:
        got = at.decode(case["ids"], skip_special_tokens=True)
        assert got == case["text"], (directory, case["ids"], got, case["text"])
    cfg = golden["config"]
    assert at.bos_token_id == cfg["bos_token_id"] and at.eos_token_id == cfg["eos_token_id"]
    print(f"  transformers AutoTokenizer agrees ({len(golden['encode'])} texts)")


def dump(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=2)
        f.write("\n")


def dump_golden(path, golden):
    """One case per line: small and diffable."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n")
        keys = list(golden)
        for k_index, key in enumerate(keys):
            value = golden[key]
            f.write(f"{json.dumps(key)}: ")
            if isinstance(value, list):
                f.write("[\n")
                f.write(",\n".join(json.dumps(v, ensure_ascii=False) for v in value))
                f.write("\n]")
            else:
                f.write(json.dumps(value, ensure_ascii=False))
            f.write(",\n" if k_index + 1 < len(keys) else "\n")
        f.write("}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--out", default=os.path.join(here, "..", "tests", "fixtures",
                                                      "tokenizers"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, build in FIXTURES.items():
        print(name)
        tok_json, config, generation, template = build()
        golden, _ = goldens(tok_json, config, generation, template)
        d = os.path.join(args.out, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tok_json, f, ensure_ascii=False, separators=(",", ":"))
            f.write("\n")
        dump(os.path.join(d, "tokenizer_config.json"), config)
        if generation is not None:
            dump(os.path.join(d, "generation_config.json"), generation)
        if template is not None:
            with open(os.path.join(d, "chat_template.jinja"), "w", encoding="utf-8") as f:
                f.write(template)
        dump_golden(os.path.join(d, "golden.json"), golden)
        if config.get("tokenizer_class") == "PreTrainedTokenizerFast":
            with tempfile.TemporaryDirectory() as tmp:
                for f in os.listdir(d):
                    shutil.copy(os.path.join(d, f), tmp)
                check_with_transformers(tmp, golden)


if __name__ == "__main__":
    main()
