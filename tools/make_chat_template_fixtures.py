#!/usr/bin/env python3
"""Golden renders of real chat templates for ctxpar's chat template tests (the jinja2 oracle).

Writes, under tests/fixtures/chat_templates/:

    templates/<name>.jinja   the real templates, verbatim, taken as data from registry packages
    goldens.json             renders of those templates over varied conversations
    language.json            renders of small templates, one language construct each
    deepseek_v32.json        prompts of DeepSeek-V3.2's Python encoder (it has no Jinja template)

The C++ tests only read these files; CI needs no Python.

Oracle
    Templates are rendered the way transformers 4.57 (`render_jinja_template`) renders them:
    jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
    extensions=[loopcontrols, the {% generation %} tag]), the `tojson` filter replaced by
    json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...), and the
    globals raise_exception (TemplateError) and strftime_now. strftime_now formats the fixed
    time FIXED_NOW so goldens are stable; the C++ tests inject the same time. The variables
    are messages, tools (None when the request has none), documents (None),
    add_generation_prompt, the special tokens, then chat_template_kwargs, as HF passes them.
    continue_final_message follows HF 4.57: a tag is appended to the final message's text,
    the render is cut at the tag.
    DeepSeek-V3.2 prompts come from vLLM's copy of the official encoder
    (vllm/tokenizers/deepseek_v32_encoding.py, loaded straight from the vLLM wheel) called the
    way vLLM's DeepSeek-V3.2 tokenizer calls it (thinking = chat_template_kwargs thinking or
    enable_thinking; tools go into a system message inserted first; drop_thinking when the
    last message is the user's).

Sources (pinned; downloaded with `pip download --no-deps`, never imported or installed)
    llama-cpp-python==0.3.36 (sdist)  vendor/llama.cpp/models/templates/*.jinja, which
                                      llama.cpp fetched from the models' Hugging Face repos
    xinference==4.1.0 (wheel)         xinference/model/llm/models/<model>.json "chat_template"
    vllm==0.33.0 (wheel)              vllm/tokenizers/deepseek_v32_encoding.py

Goldens schema
    goldens.json: {"fixed_now": "...", "conversations": {id: {"messages": [...],
    "tools": [...] | null}}, "cases": [{"template": file, "conversation": id,
    "add_generation_prompt": bool, "continue_final_message": bool, "special_tokens": {...},
    "chat_template_kwargs": {...}, "expected": text} | {..., "error": "TypeName: message"}]}
    language.json: {"context": {...}, "cases": [{"name", "template", "expected" | "error"}]}
    deepseek_v32.json: {"cases": [{"name", "messages", "tools", "chat_template_kwargs",
    "expected" | "error"}]}

How to run (Python 3.11)
    python3 -m venv /tmp/chat-template-venv
    /tmp/chat-template-venv/bin/pip install -r tools/requirements-chat-templates.txt
    /tmp/chat-template-venv/bin/python tools/make_chat_template_fixtures.py
    (--downloads DIR keeps the downloaded packages, about 420 MB, for re-runs; --out DIR
    writes elsewhere.) The output is deterministic for the pinned versions.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import hashlib
import importlib.util
import json
import random
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

REPO = Path(__file__).resolve().parents[1]
FIXED_NOW = datetime.datetime(2024, 7, 26, 13, 45, 7)

PACKAGES = {
    "llama-cpp-python": ("0.3.36", "llama_cpp_python-0.3.36.tar.gz",
                         "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"),
    "xinference": ("4.1.0", "xinference-4.1.0-py3-none-any.whl",
                   "40dd71d79e85a86f85c0d8b435fe51111fcf2c09227350d4a452229709528f2d"),
    "vllm": ("0.33.0", "vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl",
             "4b6bdec4ab269990bf70d45a3c1e94c3760a27064513760193b26d6f0da883aa"),
}

LLAMA_CPP_DIR = "llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/"
# file name here -> (package, path inside the package, special tokens family)
TEMPLATES = {
    "meta-llama-Llama-3.1-8B-Instruct.jinja": ("llama-cpp-python", "llama3"),
    "meta-llama-Llama-3.2-3B-Instruct.jinja": ("llama-cpp-python", "llama3"),
    "meta-llama-Llama-3.3-70B-Instruct.jinja": ("llama-cpp-python", "llama3"),
    "Qwen-Qwen2.5-7B-Instruct.jinja": ("llama-cpp-python", "qwen"),
    "Qwen-QwQ-32B.jinja": ("llama-cpp-python", "qwen"),
    "Qwen-Qwen3-0.6B.jinja": ("llama-cpp-python", "qwen"),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": ("llama-cpp-python", "deepseek"),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": ("llama-cpp-python", "deepseek"),
    "deepseek-ai-DeepSeek-V3.1.jinja": ("llama-cpp-python", "deepseek"),
    "GLM-4.6.jinja": ("llama-cpp-python", "glm"),
    "GLM-4.7-Flash.jinja": ("llama-cpp-python", "glm"),
    "deepseek-ai-DeepSeek-V3-0324.jinja": ("xinference:deepseek-v3-0324.json", "deepseek"),
    "deepseek-ai-DeepSeek-R1.jinja": ("xinference:deepseek-r1.json", "deepseek"),
    "deepseek-ai-DeepSeek-R1-0528.jinja": ("xinference:deepseek-r1-0528.json", "deepseek"),
    "zai-org-GLM-5.jinja": ("xinference:glm-5.json", "glm"),
}

SPECIAL_TOKENS = {
    "llama3": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "qwen": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "deepseek": {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"},
    "glm": {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"},
}

# chat_template_kwargs variants per template (besides none).
KWARG_VARIANTS = {
    "Qwen-Qwen3-0.6B.jinja": [{"enable_thinking": True}, {"enable_thinking": False}],
    "deepseek-ai-DeepSeek-V3.1.jinja": [{"thinking": True}, {"thinking": False}],
    "GLM-4.6.jinja": [{"enable_thinking": False}],
    "GLM-4.7-Flash.jinja": [{"enable_thinking": False}],
    "zai-org-GLM-5.jinja": [{"enable_thinking": False}, {"clear_thinking": False}],
    "meta-llama-Llama-3.1-8B-Instruct.jinja": [{"tools_in_user_message": False}],
}


# ---- the oracle environment (transformers 4.57 render_jinja_template) -----------------------

class GenerationTag(jinja2.ext.Extension):
    """HF's {% generation %}: renders its body (the assistant-mask tracking is not needed)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_environment() -> ImmutableSandboxedEnvironment:
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return FIXED_NOW.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


ENV = make_environment()
CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "


def hf_render(source, messages, tools, add_generation_prompt, continue_final_message,
              special_tokens, kwargs):
    template = ENV.from_string(source)
    chat = copy.deepcopy(messages)
    if continue_final_message:
        if add_generation_prompt:
            raise ValueError("continue_final_message and add_generation_prompt are not compatible")
        final = chat[-1]["content"]
        if isinstance(final, (list, tuple)):
            for block in reversed(final):
                if "text" in block:
                    final = block["text"]
                    block["text"] = block["text"] + CONTINUE_TAG
                    break
            else:
                raise ValueError("no text to continue in the final message")
        else:
            chat[-1]["content"] = chat[-1]["content"] + CONTINUE_TAG
    variables = {**special_tokens, **kwargs}
    rendered = template.render(messages=chat, tools=tools, documents=None,
                               add_generation_prompt=add_generation_prompt, **variables)
    if continue_final_message:
        if final.strip() not in rendered or CONTINUE_TAG.strip() not in rendered:
            raise ValueError("the final message does not appear in the chat")
        tag_loc = rendered.rindex(CONTINUE_TAG.strip())
        if rendered[tag_loc:tag_loc + len(CONTINUE_TAG)] == CONTINUE_TAG:
            rendered = rendered[:tag_loc]
        else:
            rendered = rendered[:tag_loc].rstrip()
    return rendered


def outcome(fn):
    try:
        return {"expected": fn()}
    except Exception as e:  # the C++ side must fail too
        return {"error": f"{type(e).__name__}: {e}"}


# ---- sources ---------------------------------------------------------------------------------

def download(package: str, downloads: Path) -> Path:
    version, file_name, sha256 = PACKAGES[package]
    path = downloads / file_name
    if not path.exists():
        kind = ["--no-binary", ":all:"] if file_name.endswith(".tar.gz") else ["--only-binary",
                                                                                ":all:"]
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", *kind, "-d",
                        str(downloads), f"{package}=={version}"], check=True)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        raise SystemExit(f"{path}: sha256 {digest}, expected {sha256}")
    return path


def read_template(name: str, origin: str, downloads: Path) -> str:
    if origin == "llama-cpp-python":
        with tarfile.open(download(origin, downloads)) as tar:
            return tar.extractfile(LLAMA_CPP_DIR + name).read().decode("utf-8")
    package, json_name = origin.split(":")
    with zipfile.ZipFile(download(package, downloads)) as whl:
        spec = json.loads(whl.read("xinference/model/llm/models/" + json_name))
    spec = spec[0] if isinstance(spec, list) else spec
    return spec["chat_template"]


def load_dsv32_encoder(downloads: Path):
    with zipfile.ZipFile(download("vllm", downloads)) as whl:
        code = whl.read("vllm/tokenizers/deepseek_v32_encoding.py")
    path = downloads / "deepseek_v32_encoding.py"
    path.write_bytes(code)
    spec = importlib.util.spec_from_file_location("deepseek_v32_encoding", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- conversations ---------------------------------------------------------------------------

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city — °C by default",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. 東京"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}},
                       "required": ["query"]},
    },
}


def tool_call(name, arguments, call_id, as_string):
    return {"id": call_id, "type": "function",
            "function": {"name": name,
                         "arguments": json.dumps(arguments, ensure_ascii=False) if as_string
                         else arguments}}


def conversations():
    c = {}
    c["single_user"] = {"messages": [{"role": "user", "content": "Hello!"}]}
    c["system_user"] = {"messages": [
        {"role": "system", "content": "You are a concise assistant."},
        {"role": "user", "content": "What is 2 + 2?"}]}
    c["multi_turn"] = {"messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Hi, who are you?"},
        {"role": "assistant", "content": "I am an assistant."},
        {"role": "user", "content": "Tell me a joke.\nMake it short."}]}
    c["non_ascii"] = {"messages": [
        {"role": "user", "content": "Übersetze: 你好，世界 🌍 — «ça va?» مرحبا"},
        {"role": "assistant", "content": "Hallo, Welt 🌍 ça va — 👩‍💻"},
        {"role": "user", "content": "Tabs\tquotes \"' and backslash \\ done  "}]}
    c["empty_content"] = {"messages": [
        {"role": "user", "content": ""},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "  spaced  "}]}
    c["assistant_last"] = {"messages": [
        {"role": "user", "content": "Write a haiku about rain."},
        {"role": "assistant", "content": "Soft rain on the roof"}]}
    c["reasoning"] = {"messages": [
        {"role": "user", "content": "Is 17 prime?"},
        {"role": "assistant", "content": "<think>\nCheck divisors up to 4.\n</think>\n\nYes, 17 is prime."},
        {"role": "user", "content": "And 21?"}]}
    c["reasoning_field"] = {"messages": [
        {"role": "user", "content": "Is 9 odd?"},
        {"role": "assistant", "content": "Yes.", "reasoning_content": "9 = 2*4 + 1."},
        {"role": "user", "content": "Thanks"},
        {"role": "assistant", "content": "You're welcome.", "reasoning_content": "Be polite."}]}
    c["tools_defined"] = {"tools": [WEATHER_TOOL, SEARCH_TOOL], "messages": [
        {"role": "system", "content": "Use tools when needed."},
        {"role": "user", "content": "Weather in Paris?"}]}
    for as_string in (False, True):
        suffix = "_string_args" if as_string else "_dict_args"
        c["tool_round_trip" + suffix] = {"tools": [WEATHER_TOOL], "messages": [
            {"role": "user", "content": "Weather in Paris and Tokyo?"},
            {"role": "assistant", "content": None, "tool_calls": [
                tool_call("get_weather", {"city": "Paris"}, "call_1", as_string),
                tool_call("get_weather", {"city": "東京", "unit": "celsius", "days": 2},
                          "call_2", as_string)]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"},
            {"role": "tool", "tool_call_id": "call_2", "content": "晴れ, 25°C"},
            {"role": "assistant", "content": "Paris is 21°C; Tokyo is sunny, 25°C."},
            {"role": "user", "content": "Thanks!"}]}
        c["tool_call_pending" + suffix] = {"tools": [SEARCH_TOOL], "messages": [
            {"role": "system", "content": "Search first."},
            {"role": "user", "content": "Latest news?"},
            {"role": "assistant", "content": "", "tool_calls": [
                tool_call("search", {"query": "news today"}, "call_9", as_string)]},
            {"role": "tool", "tool_call_id": "call_9", "content": "Nothing new."}]}
    return c


# ---- language cases --------------------------------------------------------------------------

LANGUAGE_CONTEXT = {
    "s": "Hello World", "u": "héllo 世界 🎉", "n": 42, "f": 3.5, "neg": -7, "b": True,
    "nothing": None, "lst": [3, 1, 2], "strs": ["b", "A", "c", "a"], "empty": "", "el": [],
    "ed": {}, "ws": "  padded\n\t ", "big": 12345678901234,
    "d": {"b": 1, "a": [1, 2], "c": {"x": "y"}, "Z": None},
    "msgs": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
             {"role": "assistant", "content": "yo", "extra": {"k": [1, 2.5, "t"]}},
             {"role": "user", "content": "bye"}],
    "nested": [[1, "a"], [2, "b"]], "floats": [0.1, 1e20, 1e-7, 2.0, -0.0, 123456789.125],
    # floats of every magnitude, to check str()/repr() and json.dumps digit for digit
    "rand_floats": [random.Random(1000 + i).uniform(-1, 1) * 10.0 ** random.Random(i).randint(-30, 30)
                    for i in range(64)] + [1e16, 1e15, 9999999999999998.0, 1e-4, 1e-5, 0.5],
}

LANGUAGE_CASES = [
    # output, comments, whitespace control, trim_blocks / lstrip_blocks
    ("text", "plain text only"),
    ("trailing_newline", "a\nb\n"),
    ("two_trailing_newlines", "a\n\n"),
    ("crlf", "a\r\nb\rc"),
    ("comment", "a{# note #}b"),
    ("comment_trim", "a\n{# note #}\nb"),
    ("comment_strip", "a   {#- note -#}   b"),
    ("print", "{{ s }}|{{ n }}|{{ f }}|{{ b }}|{{ nothing }}|{{ missing }}|{{ neg }}"),
    ("strip_left_right", "x  \n  {{- s -}}  \n  y"),
    ("trim_blocks", "{% if true %}\nyes\n{% endif %}\nafter"),
    ("lstrip_blocks", "line\n    {% if true %}\n    inside\n    {% endif %}\nend"),
    ("lstrip_not_for_print", "    {{ s }}\n"),
    ("plus_disables_lstrip", "a\n    {%+ if true %}x{% endif %}"),
    ("plus_disables_trim", "{% if true +%}\nx{% endif %}"),
    ("lstrip_mid_line", "ab  {% if true %}x{% endif %}"),
    ("minus_block", "a\n\n  {%- if true -%}\n\n  b  \n  {%- endif -%}\n\n  c"),
    ("raw", "{% raw %}{{ not evaluated }}{% if %}{% endraw %}"),
    ("raw_strip", "a  {%- raw -%}  x  {%- endraw -%}  b"),
    # literals and printing like Python
    ("literals", "{{ 'it\\'s' }}|{{ \"a\\nb\" }}|{{ 'tab\\tq' }}|{{ 'x' 'y' }}|{{ 1_000 }}|{{ 0x1F }}"),
    ("unicode_escape", "{{ '\\u00e9\\U0001F600\\x41\\101' }}"),
    ("float_random", "{% for x in rand_floats %}{{ x }} {% endfor %}|{{ rand_floats|tojson }}"),
    ("float_print", "{% for x in floats %}{{ x }},{% endfor %}{{ 1.5e3 }}|{{ 2.5E-3 }}"),
    ("list_repr", "{{ lst }}|{{ strs }}|{{ [1, 'a', none, true, 2.5, [ ]] }}|{{ (1,) }}|{{ (1, 'b') }}|{{ () }}"),
    ("dict_repr", "{{ d }}|{{ {'k': \"it's\", 'q': 'a\"b'} }}|{{ msgs[2] }}"),
    ("string_repr_escapes", "{{ ['a\\nb', 'c\\\\d', 'é', '\\x01', 'it\\'s \"q\"'] }}"),
    ("bool_none_names", "{{ True }}{{ False }}{{ None }}{{ true }}{{ false }}{{ none }}"),
    # attribute and item access, slicing
    ("getattr_getitem", "{{ msgs[1].role }}|{{ msgs[1]['content'] }}|{{ d.c.x }}|{{ d['a'][1] }}|{{ msgs.0.role }}"),
    ("missing_is_empty", "[{{ d.nope }}][{{ msgs[10] }}][{{ d['nope'] }}]"),
    ("negative_index", "{{ lst[-1] }}{{ s[0] }}{{ s[-1] }}{{ u[1] }}{{ u[-1] }}"),
    ("slices", "{{ lst[1:] }}|{{ lst[::-1] }}|{{ lst[:-1] }}|{{ s[::2] }}|{{ u[::-1] }}|{{ msgs[1:3]|length }}|{{ lst[5:] }}|{{ s[-3:] }}|{{ lst[::-2] }}"),
    ("dict_methods_win", "{{ d.items()|list }}|{{ d.keys()|list }}|{{ d.values()|list|length }}|{{ d.get('b') }}|{{ d.get('q', 'dflt') }}|{{ d.get('q') }}"),
    # arithmetic and operators
    ("arith", "{{ 7 + 3 }} {{ 7 - 10 }} {{ 7 * 3 }} {{ 7 / 2 }} {{ 8 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }}"),
    ("float_arith", "{{ 0.1 + 0.2 }} {{ 1.5 * 2 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 1 + true }} {{ 10 / 4 }}"),
    ("unary", "{{ -n }} {{ +n }} {{ -f }} {{ - -3 }} {{ -1|abs }} {{ not b }}"),
    ("precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 * 3 ~ 4 }} {{ 'x' + 'y' ~ 'z' * 2 }} {{ not 1 == 2 }} {{ 1 < 2 and 3 > 4 or 5 }}"),
    ("concat", "{{ 'a' ~ 1 ~ none ~ true ~ missing ~ 2.0 ~ lst }}"),
    ("string_ops", "{{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ [1] + [2, 3] }} {{ [0] * 3 }} {{ 3 * 'x' }}"),
    ("comparisons", "{{ 1 == 1.0 }} {{ 1 == true }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ none == none }} {{ 'a' != 'a' }} {{ [1] == (1,) }} {{ missing == missing }}"),
    ("in_operator", "{{ 'ell' in s }} {{ 2 in lst }} {{ 'a' in d }} {{ 'z' not in d }} {{ 5 not in lst }} {{ '' in s }}"),
    ("and_or_values", "{{ 0 or 'x' }}|{{ 'a' and 'b' }}|{{ '' and 'b' }}|{{ none or el }}|{{ missing or 'dflt' }}"),
    ("conditional_expr", "{{ 'y' if b else 'n' }}|{{ 'y' if nothing else 'n' }}|[{{ 'y' if nothing }}]|{{ 1 if false else 2 if true else 3 }}"),
    ("truthiness", "{% for v in [0, 1, '', 'a', [], [0], {}, {'a': 1}, none, 0.0, -1] %}{{ 'T' if v else 'F' }}{% endfor %}{{ 'T' if missing else 'F' }}"),
    # statements
    ("if_elif_else", "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}other{% endif %},{% endfor %}"),
    ("for_loop_vars", "{% for m in msgs %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }};{% endfor %}"),
    ("for_else", "{% for x in el %}x{% else %}empty{% endfor %}|{% for x in lst %}{{ x }}{% else %}no{% endfor %}"),
    ("for_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{% for a, b in nested %}{{ a }}{{ b }}{% endfor %}"),
    ("for_filter", "{% for m in msgs if m.role == 'user' %}{{ loop.index }}:{{ m.content }}/{{ loop.length }};{% endfor %}"),
    ("for_dict_and_string", "{% for k in d %}{{ k }}{% endfor %}|{% for c in u %}[{{ c }}]{% endfor %}"),
    ("for_prev_next", "{% for x in lst %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}|{% endfor %}"),
    ("loop_cycle", "{% for x in lst %}{{ loop.cycle('a', 'b') }}{% endfor %}"),
    ("nested_loops", "{% for a in [1, 2] %}{% for b in ['x', 'y'] %}{{ a }}{{ b }}{{ loop.index }}{% endfor %}{{ loop.index }};{% endfor %}"),
    ("break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x > 5 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
    ("set_scoping", "{% set x = 1 %}{% for i in range(3) %}{% set x = x + i %}{{ x }}{% endfor %}|{{ x }}"),
    ("set_in_if_leaks", "{% if true %}{% set y = 'set' %}{% endif %}{{ y }}"),
    ("set_per_iteration", "{% for i in range(3) %}{% if i == 0 %}{% set x = 'a' %}{% endif %}[{{ x }}]{% endfor %}"),
    ("set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 'x' %}{{ t }}"),
    ("namespace", "{% set ns = namespace(count=0, last=none) %}{% for m in msgs %}{% set ns.count = ns.count + 1 %}{% set ns.last = m.role %}{% endfor %}{{ ns.count }} {{ ns.last }} {{ ns.missing }}"),
    ("namespace_from_dict", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns['a'] }}"),
    ("block_set", "{% set block %}\n  hello {{ s }}\n{% endset %}[{{ block }}]{% set t | upper %}abc{% endset %}{{ t }}"),
    ("macro", "{% macro greet(name, greeting='Hi') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', 'Yo') }} {{ greet(greeting='Hey', name='Cy') }} [{{ greet() }}]"),
    ("macro_closure", "{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}"),
    ("macro_result_methods", "{% macro t(c) %}{{ c }}{% endmacro %}{{ t('abc /x').endswith('/x') }} {{ t(5)|length }}"),
    ("macro_recursion", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(6) }}"),
    ("generation", "{% generation %}gen {{ s }}{% endgeneration %}"),
    ("filter_block", "{% filter upper %}hello {{ s }}{% endfilter %}"),
    ("with_block", "{% with a = 1, b = s %}{{ a }} {{ b }}{% endwith %}[{{ a }}]"),
    # filters
    ("tojson", "{{ d|tojson }}|{{ u|tojson }}|{{ msgs[2]|tojson }}|{{ nothing|tojson }}|{{ floats|tojson }}|{{ 'q\"\\\\\\n\\t\\x01'|tojson }}"),
    ("tojson_options", "{{ d|tojson(indent=2) }}|{{ d|tojson(indent=4, sort_keys=true) }}|{{ d|tojson(separators=(',', ':')) }}|{{ u|tojson(ensure_ascii=true) }}|{{ el|tojson(indent=2) }}|{{ ed|tojson(indent=2) }}|{{ [1, [2, {}]]|tojson(indent=0) }}"),
    ("tojson_unicode_html", "{{ '<b>&\\'x\\'</b> ü 😀'|tojson }}"),
    ("trim_length", "[{{ ws|trim }}][{{ ws|trim(' ') }}][{{ 'xxhixx'|trim('x') }}] {{ u|length }} {{ lst|count }} {{ d|length }} {{ missing|length }}"),
    ("first_last", "{{ lst|first }} {{ lst|last }} {{ s|first }} {{ s|last }} {{ d|first }} [{{ el|first }}]"),
    ("join", "{{ lst|join(', ') }}|{{ strs|join }}|{{ msgs|join('/', attribute='role') }}|{{ [1, none, 'x']|join('-') }}"),
    ("default", "{{ missing|default('dflt') }}|{{ nothing|default('dflt') }}|{{ empty|default('dflt', true) }}|{{ missing|d('x') }}|{{ s|default('no') }}|[{{ missing|default }}]"),
    ("case_filters", "{{ s|upper }} {{ s|lower }} {{ 'hello wORLD-foo(bar) 2x'|title }} {{ 'hELLO world'|capitalize }}"),
    ("replace", "{{ s|replace('o', '0') }} {{ s|replace('l', 'L', 2) }} {{ 'abc'|replace('', '-') }}"),
    ("list_string", "{{ 'abc'|list }} {{ d|list }} {{ lst|string }} {{ 5|string ~ 'x' }} {{ nothing|string }}"),
    ("int_float", "{{ '42'|int }} {{ '42.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ '0x1A'|int(0, 16) }} {{ '2.5'|float }} {{ 'x'|float }} {{ 3|float }} {{ ' 12 '|int }}"),
    ("items_dictsort", "{{ d|items|list }}|{{ d|dictsort }}|{{ d|dictsort(true) }}|{{ d|dictsort(reverse=true) }}|{{ {'b': 2, 'a': 3}|dictsort(by='value') }}"),
    ("selectattr_map", "{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }}|{{ msgs|rejectattr('role', 'eq', 'user')|map(attribute='role')|join(',') }}|{{ msgs|selectattr('extra')|list|length }}|{{ msgs|map(attribute='extra.k.1', default='-')|list }}"),
    ("select_reject", "{{ range(10)|select('odd')|list }} {{ range(10)|reject('even')|list }} {{ [0, 1, '', 'a']|select|list }} {{ strs|map('upper')|list }} {{ range(5)|select('divisibleby', 2)|list }}"),
    ("unique_reverse_sort", "{{ strs|unique|list }} {{ strs|unique(case_sensitive=true)|list }} {{ lst|reverse|list }} {{ s|reverse }} {{ strs|sort }} {{ strs|sort(case_sensitive=true) }} {{ lst|sort(reverse=true) }} {{ msgs|sort(attribute='role')|map(attribute='content')|list }}"),
    ("min_max_sum", "{{ lst|min }} {{ lst|max }} {{ strs|min }} {{ lst|sum }} {{ [1.5, 2]|sum }} {{ msgs|map(attribute='content')|max }}"),
    ("safe_escape", "{{ '<a href=\"x\">&</a>'|e }} {{ '<b>'|escape }} {{ '<i>'|safe }}"),
    ("round_abs_wordcount", "{{ 2.5|round }} {{ 3.14159|round(2) }} {{ 2.7|round(0, 'floor') }} {{ -3|abs }} {{ 'one two  three'|wordcount }}"),
    ("indent", "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent('> ', blank=true) }}"),
    ("attr_filter", "{{ (d|attr('items'))()|list|length }}|{{ d|attr('b') }}|"),
    # tests
    ("tests_types", "{{ s is string }} {{ n is number }} {{ f is number }} {{ b is number }} {{ n is integer }} {{ b is integer }} {{ f is float }} {{ b is boolean }} {{ d is mapping }} {{ lst is sequence }} {{ s is iterable }} {{ n is iterable }} {{ nothing is none }} {{ missing is defined }} {{ missing is undefined }} {{ lst is mapping }}"),
    ("tests_values", "{{ b is true }} {{ 1 is true }} {{ false is false }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 'a' is eq 'a' }} {{ 'a' is equalto 'b' }} {{ 2 is in lst }} {{ 5 is ne 5 }} {{ 3 is gt 2 }} {{ 3 is lt 2 }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ nothing is not none }} {{ missing is not defined }}"),
    ("test_sameas_callable", "{{ nothing is sameas none }} {{ d.items is callable }} {{ s is callable }} {{ 'upper' is filter }} {{ 'odd' is test }}"),
    # methods
    ("str_methods", "{{ s.startswith('He') }} {{ s.endswith(('x', 'ld')) }} {{ s.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ '  x y  '.split() }} {{ ws.strip() }}|{{ ws.lstrip() }}|{{ ws.rstrip() }}|{{ 'xxaxx'.strip('x') }} {{ '\\nhi\\n'.rstrip('\\n') }}"),
    ("str_methods2", "{{ s.replace('l', 'L') }} {{ s.upper() }} {{ s.lower() }} {{ 'hello world'.title() }} {{ 'hello2world'.title() }} {{ 'hELLO'.capitalize() }} {{ s.find('o') }} {{ s.rfind('o') }} {{ s.find('z') }} {{ u.find('世') }} {{ s.count('l') }} {{ '-'.join(['a', 'b']) }}"),
    ("str_format", "{{ '{} and {}'.format('a', 1) }} {{ '{0}{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='Z') }} {{ '{{lit}} {}'.format(none) }} {{ '{!r}'.format('q') }}"),
    ("str_methods3", "{{ 'a\\nb\\r\\nc'.splitlines() }} {{ 'abc'.removeprefix('a') }} {{ 'abc'.removesuffix('c') }} {{ 'k=v=w'.partition('=') }} {{ 'k=v=w'.rpartition('=') }} {{ '123'.isdigit() }} {{ ' '.isspace() }} {{ 'ab'.isalpha() }}"),
    ("think_split", "{% set c = '<think>\\nreason\\n</think>\\n\\nanswer' %}{{ c.split('</think>')[-1].lstrip('\\n') }}|{{ c.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}|{{ '</think>' in c }}"),
    ("list_methods", "{{ lst.count(1) }} {{ lst.index(2) }} {{ (1, 2, 1).count(1) }}"),
    # globals
    ("range", "{{ range(3)|list }} {{ range(1, 4)|list }} {{ range(10, 0, -3)|list }} {{ range(0)|list }} {{ range(2, 1)|list }}"),
    ("dict_global", "{{ dict(a=1, b='x') }} {{ dict({'z': 1}, y=2) }}"),
    ("strftime_now", "{{ strftime_now('%d %b %Y') }} {{ strftime_now('%Y-%m-%dT%H:%M:%S %A %j') }}"),
    # errors jinja2 raises at render time
    ("error_raise_exception", "before{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"),
    ("error_undefined_attribute", "{{ missing.attr }}"),
    ("error_undefined_chain", "{{ d.nope.deeper }}"),
    ("error_add_str_int", "{{ 'a' + 1 }}"),
    ("error_concat_binds_tighter_than_plus", "{{ 1 ~ 2 + 3 }}"),
    ("error_add_undefined", "{{ missing + 1 }}"),
    ("error_compare_types", "{{ 'a' < 1 }}"),
    ("error_call_undefined", "{{ nope() }}"),
    ("error_not_callable", "{{ s() }}"),
    ("error_division_by_zero", "{{ 1 / 0 }}"),
    ("error_modulo_zero", "{{ 1 % 0 }}"),
    ("error_iterate_int", "{% for x in n %}{% endfor %}"),
    ("error_iterate_none", "{% for x in nothing %}{% endfor %}"),
    ("error_unpack", "{% for a, b in lst %}{% endfor %}"),
    ("error_tojson_undefined", "{{ missing|tojson }}"),
    ("error_list_append", "{% set x = lst.append(4) %}"),
    ("error_setattr_non_namespace", "{% set d.x = 1 %}"),
    ("error_in_none", "{{ 'a' in nothing }}"),
    ("error_slice_step_zero", "{{ lst[::0] }}"),
    ("error_macro_too_many_args", "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"),
    ("error_items_of_list", "{{ lst|items|list }}"),
    ("error_split_empty_separator", "{{ s.split('') }}"),
    # errors jinja2 raises at parse time
    ("error_unknown_tag", "{% frobnicate %}"),
    ("error_unknown_filter", "{{ s|frobnicate }}"),
    ("error_unknown_test", "{{ s is frobnicate }}"),
    ("error_unterminated_if", "{% if true %}never closed"),
    ("error_unterminated_for", "{% for x in lst %}{{ x }}"),
    ("error_unterminated_print", "{{ s "),
    ("error_unterminated_comment", "{# never closed"),
    ("error_unterminated_string", "{{ 'abc }}"),
    ("error_stray_endif", "text{% endif %}"),
    ("error_stray_else", "{% else %}"),
    ("error_bad_expression", "{{ 1 + }}"),
    ("error_unbalanced", "{{ (1 + 2 }}"),
    ("error_break_outside_loop", "{% break %}"),
    ("error_include", "{% include 'other.jinja' %}"),
    ("error_extends", "{% extends 'base.jinja' %}"),
    ("error_chained_is", "{{ 1 is number is number }}"),
]


def language_cases():
    out = []
    for name, template in LANGUAGE_CASES:
        def render(template=template):
            return ENV.from_string(template).render(**LANGUAGE_CONTEXT)
        out.append({"name": name, "template": template, **outcome(render)})
        if name.startswith("error_") != ("error" in out[-1]):
            raise SystemExit(f"language case {name}: jinja2 gave {out[-1]}")
    return out


# ---- DeepSeek-V3.2 ---------------------------------------------------------------------------

def dsv32_cases(encoder):
    def vllm_apply(messages, tools, kwargs):
        # vllm/tokenizers/deepseek_v32.py (0.33.0) apply_chat_template, tokenize=False.
        thinking = kwargs.get("thinking", False) or kwargs.get("enable_thinking", False)
        messages = copy.deepcopy(messages)
        if tools is not None and len(tools) > 0:
            messages.insert(0, {"role": "system"})
            messages[0]["tools"] = tools
        drop_thinking = messages[-1]["role"] == "user"
        return encoder.encode_messages(messages, thinking_mode="thinking" if thinking else "chat",
                                       drop_thinking=drop_thinking)

    conv = conversations()
    reasoning = [
        {"role": "system", "content": "You are DeepSeek."},
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "Hello! I am DeepSeek.", "reasoning": "greet back"},
        {"role": "user", "content": "1+1=?"}]
    tool_flow = [
        {"role": "user", "content": "Weather in Paris and Tokyo?"},
        {"role": "assistant", "content": "", "reasoning": "Need two lookups.", "tool_calls": [
            tool_call("get_weather", {"city": "Paris"}, "c1", True),
            tool_call("get_weather", {"city": "東京", "days": 2, "opts": {"a": [1, None]}}, "c2",
                      False)]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21}"},
        {"role": "tool", "tool_call_id": "c2", "content": "晴れ"}]
    inputs = {
        "single_user": (conv["single_user"]["messages"], None),
        "system_user": (conv["system_user"]["messages"], None),
        "multi_turn": (conv["multi_turn"]["messages"], None),
        "non_ascii": (conv["non_ascii"]["messages"], None),
        "reasoning_history": (reasoning, None),
        "tools_defined": (conv["tools_defined"]["messages"], [WEATHER_TOOL, SEARCH_TOOL]),
        "tool_flow": (tool_flow, [WEATHER_TOOL]),
        "tool_flow_answered": (tool_flow + [
            {"role": "assistant", "content": "Paris 21°C, Tokyo sunny.", "reasoning": "Done."}],
            [WEATHER_TOOL]),
        "assistant_prefix": ([{"role": "user", "content": "Count to 3"},
                              {"role": "assistant", "content": "1, 2", "prefix": True}], None),
        "developer": ([{"role": "developer", "content": "Be brief."},
                       {"role": "user", "content": "Hi"}], None),
        "empty_user": ([{"role": "user", "content": ""}], None),
        "error_thinking_without_reasoning": ([{"role": "user", "content": "Hi"},
                                              {"role": "assistant", "content": "Hello"}], None),
        "error_tool_without_call": ([{"role": "user", "content": "Hi"},
                                     {"role": "assistant", "content": "x"},
                                     {"role": "tool", "content": "y"}], None),
        "error_bad_role": ([{"role": "robot", "content": "beep"}], None),
    }
    cases = []
    for name, (messages, tools) in inputs.items():
        for kwargs in ({}, {"thinking": True}, {"enable_thinking": True}):
            r = outcome(lambda: vllm_apply(messages, tools, kwargs))
            cases.append({"name": name, "messages": messages, "tools": tools,
                          "chat_template_kwargs": kwargs, **r})
    return cases


# ---- main ------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "tests/fixtures/chat_templates")
    ap.add_argument("--downloads", type=Path, default=Path("/tmp/ctxpar-chat-template-sources"))
    args = ap.parse_args()
    args.downloads.mkdir(parents=True, exist_ok=True)
    (args.out / "templates").mkdir(parents=True, exist_ok=True)

    sources = {}
    for name, (origin, _) in TEMPLATES.items():
        sources[name] = read_template(name, origin, args.downloads)
        (args.out / "templates" / name).write_text(sources[name], encoding="utf-8")

    convs = conversations()
    cases = []
    for name, (_, family) in TEMPLATES.items():
        for kwargs in [{}] + KWARG_VARIANTS.get(name, []):
            for conv_id, conv in convs.items():
                tools = conv.get("tools")
                for agp, cont in ((False, False), (True, False), (False, True)):
                    if cont and conv_id not in ("assistant_last", "single_user"):
                        continue
                    r = outcome(lambda: hf_render(sources[name], conv["messages"], tools, agp,
                                                  cont, SPECIAL_TOKENS[family], kwargs))
                    cases.append({"template": name, "conversation": conv_id,
                                  "add_generation_prompt": agp, "continue_final_message": cont,
                                  "special_tokens": SPECIAL_TOKENS[family],
                                  "chat_template_kwargs": kwargs, **r})

    def dump(path, obj):
        path.write_text(json.dumps(obj, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")

    dump(args.out / "goldens.json", {"fixed_now": FIXED_NOW.isoformat(), "conversations": convs,
                                     "cases": cases})
    dump(args.out / "language.json", {"fixed_now": FIXED_NOW.isoformat(),
                                      "context": LANGUAGE_CONTEXT, "cases": language_cases()})
    dump(args.out / "deepseek_v32.json",
         {"cases": dsv32_cases(load_dsv32_encoder(args.downloads))})
    errors = sum("error" in c for c in cases)
    print(f"{len(TEMPLATES)} templates, {len(cases)} cases ({errors} raise), "
          f"{len(LANGUAGE_CASES)} language cases -> {args.out}")


if __name__ == "__main__":
    main()
