"""A pasted ``vllm serve`` line, read as vLLM 0.33.0's parser reads it.

``read_serve_line(text)`` takes ``vllm serve MODEL --flag value …`` (or the flags alone, or
``python -m vllm.entrypoints.openai.api_server …``), rewrites it as vLLM's
``FlexibleArgumentParser.parse_args`` does (vllm/utils/argparse_utils.py: ``--model`` moved to the
front, ``_`` read as ``-`` in flag names, ``-O3`` as ``--optimization-level 3``, dotted keys such as
``--speculative-config.method eagle3`` merged into one JSON value), and checks every flag against the
table of flags vLLM 0.33.0's own ``vllm serve`` parser accepts (vllm_serve_flags.json, written from
that parser by lab/real_vllm/deployment/serve_flags.py; a conformance test keeps them equal). An unknown
flag, a missing value, bad JSON, a value of the wrong type and the pairs vLLM itself refuses raise
``ServeLineError`` naming the flag. The flags that decide attention metadata are returned typed in
``ServeLine.settings`` under vLLM's ``dest`` names; the others are kept, by name, in ``ignored``.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

FLAGS_FILE = Path(__file__).with_name("vllm_serve_flags.json")
MAX_LINE_CHARS = 20_000


class ServeLineError(ValueError):
    """A line vLLM would refuse, or the lab cannot read: the message names the flag."""


@cache
def serve_flags() -> dict[str, dict]:
    """Option string -> {"dest", "takes": value | list | optional | switch, "stores"} (vLLM 0.33.0)."""
    return json.loads(FLAGS_FILE.read_text())["flags"]


def human_readable_int(text: str, flag: str) -> int:
    """vllm/utils/argparse_utils.py ``human_readable_int``: ``1k`` = 1,000, ``1K`` = 1,024 (no decimals
    with a binary suffix), ``25.6k`` = 25,600."""
    text = str(text).strip()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", text)
    if m:
        number, suffix = m.groups()
        if suffix.islower():
            value = float(number) * 1000 ** ("kmgt".index(suffix) + 1)
            if value == float("inf"):  # 300 digits and a suffix: int() of an infinite float raised OverflowError
                raise ServeLineError(f"{flag}: {text[:40]!r}… is too large a number")
            return int(value)
        if "." in number:
            raise ServeLineError(f"{flag} {text}: no decimals with a binary suffix; did you mean {text.lower()}?")
        return int(number) * 1024 ** ("KMGT".index(suffix) + 1)
    try:
        return int(text)
    except ValueError:
        raise ServeLineError(f"{flag}: {text!r} is not an integer (e.g. 32768, 32k or 32K)") from None


def _max_model_len(text: str, flag: str) -> int | None:
    # human_readable_int_or_auto: -1 or "auto" let vLLM derive it from the model (None here).
    if str(text).strip() in ("-1", "auto"):
        return None
    return human_readable_int(text, flag)


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ServeLineError(f"the number {text[:40]} is out of range")
    return value


def _no_constant(name: str):
    raise ServeLineError(f"{name} is not a JSON number")


def _loads(text: str, flag: str):
    """JSON as vLLM's json.loads reads a flag's value, with what would crash later said here, naming the flag:
    a nesting too deep for the parser, a number out of range (1e400), NaN/Infinity, an integer too long."""
    try:
        return json.loads(text, parse_float=_finite, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise ServeLineError(f"{flag}: not valid JSON ({e.msg} at character {e.pos}): {text[:200]!r}") from None
    except RecursionError:
        raise ServeLineError(f"{flag}: the JSON is nested too deeply") from None
    except ServeLineError as e:
        raise ServeLineError(f"{flag}: {e}") from None
    except ValueError as e:  # an integer of more than 4,300 digits
        raise ServeLineError(f"{flag}: not a usable JSON value ({str(e)[:100]})") from None


def _json_dict(text, flag: str) -> dict:
    if isinstance(text, dict):
        return text
    if str(text).strip() in ("", "None"):  # vLLM's optional_type: an empty value is no config
        return {}
    value = _loads(str(text), flag)
    if not isinstance(value, dict):
        raise ServeLineError(f"{flag}: expects a JSON object like '{{\"key\": value}}', got {text!r}")
    return value


def _bool(value, flag):
    return value


def _int(text, flag):
    return human_readable_int(text, flag)


def _mamba_block_size(text, flag):
    value = human_readable_int(text, flag)
    if value <= 0:  # vllm/config/cache.py CacheConfig.mamba_block_size: Field(default=None, gt=0)
        raise ServeLineError(f"{flag} {value}: vLLM refuses it (CacheConfig.mamba_block_size must be greater than 0)")
    return value


def _str(text, flag):
    return str(text)


def _ints(values, flag):
    return [human_readable_int(v, flag) for v in values]


# The dests the answer reads, each with its reader (vLLM's type for that flag, vllm/engine/arg_utils.py).
READERS = {
    "model": _str,
    "max_model_len": _max_model_len,
    "max_num_seqs": _int,
    "max_num_batched_tokens": _int,
    "block_size": _int,
    "kv_cache_dtype": _str,
    "dtype": _str,
    "tensor_parallel_size": _int,
    "enforce_eager": _bool,
    "async_scheduling": _bool,
    "attention_backend": _str,
    "attention_config": _json_dict,
    "speculative_config": _json_dict,
    "spec_method": _str,
    "spec_model": _str,
    "spec_tokens": _int,
    "compilation_config": _json_dict,
    "cudagraph_capture_sizes": _ints,
    "max_cudagraph_capture_size": _int,
    "optimization_level": _str,
    "performance_mode": _str,
    "disable_sliding_window": _bool,
    "disable_hybrid_kv_cache_manager": _bool,
    "hf_overrides": _json_dict,
    "revision": _str,  # which cached snapshot's config.json (lab/deployment/hf_cache.py)
    "language_model_only": _bool,  # text-only serving turns an mm-prefix LM's prefix attention off
    "limit_mm_per_prompt": _json_dict,
    "enable_prefix_caching": _bool,  # a hybrid's mamba cache mode, so its block alignment
    "mamba_cache_dtype": _str,  # a hybrid's mamba state page, so its block alignment (mamba_state.py)
    "mamba_ssm_cache_dtype": _str,
    "mamba_cache_mode": _str,  # "align" or "none" (0.19.1 / 0.22.1 also pick "all" themselves: hybrid_block.py)
    "mamba_block_size": _mamba_block_size,  # mode "all"'s chunk grid in 0.19.1 / 0.22.1 (hybrid_block.py)
    "enable_chunked_prefill": _bool,  # the scheduler's limits (and vLLM's refusal without it)
    "runner": _str,  # "pooling": graph mode and async scheduling
    "convert": _str,  # a generative model adapted for pooling runs the pooling runner
    "kv_transfer_config": _json_dict,  # a connector without SupportsHMA: no hybrid KV cache, PIECEWISE graphs
}
_PREFIXES = (["vllm", "serve"], ["python", "-m", "vllm.entrypoints.openai.api_server"], ["serve"])


@dataclass(frozen=True)
class ServeLine:
    """What a ``vllm serve`` line sets: ``settings`` (dest -> typed value, only the flags given),
    ``ignored`` (flags vLLM accepts that do not decide attention metadata), ``env`` (leading
    ``NAME=value`` words, kept but not read)."""

    model: str | None
    settings: dict = field(default_factory=dict)
    ignored: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()


def _words(text: str) -> list[str]:
    if len(text) > MAX_LINE_CHARS:
        raise ServeLineError(f"the line is {len(text):,} characters; at most {MAX_LINE_CHARS:,}")
    text = re.sub(r"\\\r?\n", " ", text).strip()  # shell line continuations
    text = re.sub(r"^\$\s+", "", text)  # a copied prompt
    try:
        return shlex.split(text)
    except ValueError as e:  # an unclosed quote, usually around a JSON value
        raise ServeLineError(f"cannot split the line into words ({e}): check the quotes around JSON values") from None


def _flexible(args: list[str]) -> list[str]:
    """FlexibleArgumentParser.parse_args's rewrites, before argparse sees the words."""
    out = []
    for i, arg in enumerate(args):
        if arg.startswith("--"):
            key, eq, value = arg.partition("=")
            head, dot, tail = key[2:].partition(".")
            out.append("--" + head.replace("_", "-") + dot + tail + eq + value)
        elif arg.startswith("-O") and arg != "-O" and not out[-1:] == ["--optimization-level"]:
            out += ["--optimization-level", arg[3:] if arg[2:3] == "=" else arg[2:]]
        elif arg == "-O" and i + 1 < len(args) and args[i + 1] in {"0", "1", "2", "3"}:
            out.append("--optimization-level")
        else:
            out.append(arg)
    return out


def _suggest(flag: str) -> str:
    close = difflib.get_close_matches(flag, list(serve_flags()), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(close)}?" if close else ""


def read_serve_line(text: str) -> ServeLine:
    """Read a pasted ``vllm serve`` line (or its flags alone). Raises ServeLineError naming the flag."""
    if not isinstance(text, str) or not text.strip():
        raise ServeLineError("paste a `vllm serve MODEL --flag value …` line")
    words = _words(text)
    env = []
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        env.append(words.pop(0))
    for prefix in _PREFIXES:
        if words[: len(prefix)] == prefix:
            words = words[len(prefix) :]
            break
    else:
        if words and words[0] == "vllm":
            raise ServeLineError(f"only `vllm serve` lines are read, not `vllm {' '.join(words[1:2])}`")
    return _parse(_flexible(words), tuple(env))


def _dotted_value(text: str, key: str):
    """A dotted key's value as FlexibleArgumentParser.parse_args reads it: JSON, else a human-readable integer
    ("--config.field 80g"), else the text itself. JSON that would crash later (1e400, NaN) is refused here."""
    try:
        return _loads(text, key)
    except ServeLineError as e:
        if "not valid JSON" not in str(e):
            raise
        try:
            return human_readable_int(text, "")
        except ServeLineError:
            return text


def _merge(original: dict, update: dict) -> None:
    # parse_args' recursive_dict_update: dicts merge, lists extend, anything else is replaced
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(original.get(k), dict):
            _merge(original[k], v)
        elif isinstance(v, list) and isinstance(original.get(k), list):
            original[k] += v
        else:
            original[k] = v


def _dotted(words: list[str]) -> list[str]:
    """FlexibleArgumentParser.parse_args' dotted keys: every ``-x.a.b value`` (``-x.a.b+ v1,v2`` appends to a
    list) is taken out and merged into one JSON object per ``-x``, put back at the end of the line as
    ``-x '{…}'``: so it replaces an earlier ``-x '{…}'`` of the same flag (argparse keeps the last)."""
    out: list[str] = []
    objects: dict[str, dict] = {}
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not (word.startswith("-") and "." in word) or ("=" in word and "." not in word.split("=", 1)[0]):
            out.append(word)
            continue
        key, eq, value = word.partition("=")
        if not eq:
            if i >= len(words):
                raise ServeLineError(f"{key}: needs a value")
            value, i = words[i], i + 1
        parsed = json.dumps(value.split(",")) if key.endswith("+") else value
        base, *path = key.removesuffix("+").split(".")
        node: object = _dotted_value(parsed, key)
        for k in reversed(path):
            node = {k: node}
        try:
            _merge(objects.setdefault(base, {}), node)  # type: ignore[arg-type]
        except RecursionError:
            raise ServeLineError(f"{key[:80]}…: a dotted key nested too deeply") from None
    for base, obj in objects.items():
        try:
            out += [base, json.dumps(obj)]
        except RecursionError:  # a key thousands of dots deep: said here, not a traceback (hostile probe m1)
            raise ServeLineError(f"{base}: a dotted key nested too deeply") from None
    return out


def _option(name: str) -> str:
    """The option string argparse takes ``name`` for: itself, or the one flag it abbreviates (vLLM's parser keeps
    argparse's allow_abbrev: ``--max-model`` is ``--max-model-len``); two or more is vLLM's "ambiguous option"."""
    flags = serve_flags()
    if name in flags:
        return name
    if name.startswith("--") and len(name) > 2:
        matches = [opt for opt in flags if opt.startswith(name)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise ServeLineError(f"ambiguous option: {name} could match {', '.join(matches[:8])}")
    raise ServeLineError(f"{name}: not a `vllm serve` flag in vLLM 0.33.0{_suggest(name)}")


def value_class(value: str) -> str:
    """The class of a flag value vLLM's parser was asked about for every flag (serve_flags.py PROBES)."""
    text = str(value).strip()
    if text[:1] in "{[":
        try:
            json.loads(text)
            return "json"
        except ValueError:
            return "text"
    if re.fullmatch(r"-?\d+", text):
        return "int"
    if re.fullmatch(r"\d+(\.\d+)?[kKmMgGtT]", text):
        return "suffixed"
    try:
        float(text)
        return "float"
    except ValueError:
        return "text"


def _check_value(base: str, spec: dict, value) -> None:
    """A value vLLM's parser would refuse for a flag the answer does not read: not one of its choices, or of a
    class its type does not take (vllm_serve_flags.json: ``choices``, ``accepts``; a flag whose type took none of
    the probes, such as --port's range check, is not checked)."""
    for v in value if isinstance(value, list) else [value]:
        if v is True:  # an optional value left out: argparse stores the flag's const
            continue
        if "choices" in spec and str(v) not in spec["choices"]:
            raise ServeLineError(f"{base}: invalid choice {str(v)[:80]!r} (choose from {', '.join(spec['choices'])})")
        if spec.get("accepts") and value_class(v) not in spec["accepts"]:
            raise ServeLineError(f"{base}: vLLM's parser does not take {str(v)[:80]!r} here (a {value_class(v)})")


def _is_value(word: str) -> bool:
    # argparse takes a word as a value unless it looks like an option (a negative number does not: no vLLM flag
    # looks like one)
    return not word.startswith("-") or bool(re.fullmatch(r"-\d+(\.\d+)?|-\.\d+", word))


def _parse(words: list[str], env: tuple[str, ...]) -> ServeLine:
    flags = serve_flags()
    raw: dict[str, object] = {}
    given: dict[str, str] = {}  # dest -> the flag that set it (the last: argparse keeps the last value)
    positional: list[str] = []
    ignored: list[str] = []
    words = _dotted(words)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if _is_value(word):
            positional.append(word)
            continue
        name, eq, value = word.partition("=")
        base = _option(name)
        spec = flags[base]
        takes = spec["takes"]
        if takes == "switch":
            if eq:
                raise ServeLineError(f"{base}: a switch, it takes no value (got {value!r})")
            value = spec["stores"]
        elif takes == "list":
            values = [value] if eq else []
            while not eq and i < len(words) and _is_value(words[i]):
                values.append(words[i])
                i += 1
            if not values:
                raise ServeLineError(f"{base}: needs one or more values")
            value = values
        elif not eq:
            if i < len(words) and _is_value(words[i]):
                value, i = words[i], i + 1
            elif takes == "optional":
                value = True
            else:
                raise ServeLineError(f"{base}: needs a value")
        dest = spec["dest"]
        # parse_args only warns "Found duplicate keys" for a flag given twice; argparse keeps the last value
        raw[dest], given[dest] = value, base
        if dest not in READERS:
            if takes != "switch":
                _check_value(base, spec, value)
            ignored.append(base)
        elif dest in ("mamba_cache_dtype", "mamba_ssm_cache_dtype", "mamba_cache_mode"):  # read: choices checked
            _check_value(base, spec, value)
    if len(positional) > 1:
        raise ServeLineError(f"one model only: unexpected words {' '.join(positional[1:])!r}")
    settings = {dest: READERS[dest](v, given.get(dest, dest)) for dest, v in raw.items() if dest in READERS}
    model = positional[0] if positional else settings.pop("model", None)
    if positional and "model" in settings:
        raise ServeLineError(f"the model is given twice: {positional[0]!r} and --model {settings['model']!r}")
    settings.pop("model", None)
    _check_pairs(settings, given)
    _check_capture_sizes(settings, given)
    return ServeLine(model, settings, tuple(dict.fromkeys(ignored)), env, tuple(words))


def _check_pairs(settings: dict, given: dict) -> None:
    """The pairs vLLM 0.33.0 refuses (vllm/engine/arg_utils.py)."""
    spec = settings.get("speculative_config") or {}
    # EngineArgs.create_speculative_config: "--spec-… and --speculative-config[…] are mutually exclusive"
    for dest, key in (("spec_method", "method"), ("spec_model", "model"), ("spec_tokens", "num_speculative_tokens")):
        if dest in settings and key in spec:
            raise ServeLineError(f"{given[dest]} and --speculative-config['{key}'] are mutually exclusive")
    cc = settings.get("compilation_config") or {}
    # EngineArgs.create_engine_config: the shorthand and the compilation-config key are mutually exclusive
    for dest in ("cudagraph_capture_sizes", "max_cudagraph_capture_size"):
        if dest in settings and cc.get(dest) is not None:
            raise ServeLineError(f"{given[dest]} and --compilation-config's {dest} are mutually exclusive")
    ac = settings.get("attention_config") or {}
    # EngineArgs.create_engine_config: "attention_backend and attention_config.backend are mutually exclusive"
    if "attention_backend" in settings and ac.get("backend") is not None:
        raise ServeLineError(f"{given['attention_backend']} and --attention-config's backend are mutually exclusive")


def _check_capture_sizes(settings: dict, given: dict) -> None:
    """Capture sizes the lab models (positive integers), refused naming the flag they came from: the scenario's
    own check named only its field, and a bad --max-cudagraph-capture-size as an empty list (issue 36)."""
    cc = settings.get("compilation_config") or {}
    for key in ("cudagraph_capture_sizes", "max_cudagraph_capture_size"):
        value = settings[key] if key in settings else cc.get(key)
        if value is None:
            continue
        flag = given[key] if key in settings else f"{given.get('compilation_config', '-cc')}'s {key}"
        if key == "cudagraph_capture_sizes" and not isinstance(value, list):
            raise ServeLineError(f"{flag}: expects a list of integers like [1, 2, 4, 8], got {value!r}")
        values = value if isinstance(value, list) else [value]
        if any(not isinstance(v, int) or isinstance(v, bool) or v < 1 for v in values):
            raise ServeLineError(f"{flag}: capture sizes are positive integers (the lab models no other): {value!r}")
