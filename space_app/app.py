"""The Gradio Space: Convert (form, live progress, result), Browse and Status tabs.

    demo = create_app(JobQueue(...))       # tests and `mobius space` build it around a queue
    python space_app/app.py                 # a Hub Space (`app_file`): queue from the environment

The app only submits `ConversionRequest`s and reads jobs back; workers do the work (an
in-process one in the embedded default). Publishing uses the service's `HF_TOKEN`; the
signed-in user is only the requester (and the namespace of "a new repo in my namespace").
"""

from __future__ import annotations

import html
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script (a Space's app_file): the repo root is the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gradio as gr
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    HFValidationError,
    RepositoryNotFoundError,
)
from huggingface_hub.utils import validate_repo_id

import model_cards
from converter.config import model_type_of
from converter.errors import MobiusError
from converter.execution_providers import DTYPES, EXECUTION_PROVIDERS
from converter.registry import FAMILIES
from pipeline.jobs import ConversionRequest, Job, JobQueue

SPACE_USER_ENV = "MOBIUS_SPACE_USER"  # the requester when nobody signs in (local runs only)
POLL_S = 0.5
HUB_TIMEOUT_S = 5.0
TARGETS = {"Pull request on the source repo": "pr", "New repo in my namespace": "repo"}
CARD_DIR = Path(tempfile.gettempdir()) / "mobius-space-cards"
PR_URL = re.compile(r"/(?P<repo>[^/]+/[^/]+)/discussions/(?P<num>\d+)$")


# -- model check as you type -----------------------------------------------------------------
def check_model(model_id: str, token: str | None = None) -> str:
    """One markdown line: does the repo exist, is its architecture supported, how big is it."""
    model_id = model_id.strip()
    if not model_id:
        return ""
    try:
        validate_repo_id(model_id)
        info = HfApi().model_info(model_id, files_metadata=True, token=token, timeout=HUB_TIMEOUT_S)
        config = Path(hf_hub_download(model_id, "config.json", token=token, etag_timeout=5))
        model_type = model_type_of(_json(config))
    except HFValidationError:
        return f"❌ `{model_id}` is not a Hub model id (namespace/name)"
    except GatedRepoError:
        return f"🔒 `{model_id}` is gated: accept its terms on the Hub first"
    except RepositoryNotFoundError:
        return f"❌ `{model_id}` was not found on the Hub (or it is private)"
    except (HfHubHTTPError, OSError) as err:
        if "config.json" in str(err) or "EntryNotFound" in type(err).__name__:
            return f"❌ `{model_id}` has no config.json: not a transformers model"
        return f"⚠️ could not check `{model_id}` on the Hub: {_line(err)}"
    except (MobiusError, ValueError) as err:
        return f"❌ `{model_id}`: {_line(err)}"
    size = sum(s.size or 0 for s in info.siblings or [] if s.rfilename.endswith(".safetensors"))
    weights = model_cards.human_size(size) if size else "no safetensors weights"
    if model_type not in FAMILIES:
        return f"❌ `{model_id}`: architecture `{model_type}` is not supported ({weights})"
    return f"✅ `{model_id}`: `{model_type}`, {weights}"


def explain_pairs(eps: list[str], dtypes: list[str]) -> str:
    """Markdown lines for the chosen (ep, dtype) pairs that no EP runs, e.g. bf16 on cpu."""
    lines = []
    for dtype in dtypes:
        bad = [ep for ep in eps if dtype not in EXECUTION_PROVIDERS[ep].dtypes]
        if bad:
            runs = [e.name for e in EXECUTION_PROVIDERS.values() if dtype in e.dtypes]
            lines.append(f"⚠️ {dtype} runs only on {', '.join(runs)}: not on {', '.join(bad)}")
    return "\n\n".join(lines)


# -- converting --------------------------------------------------------------------------------
def requester_of(profile: gr.OAuthProfile | None) -> str:
    """The signed-in user; off a Space, `$MOBIUS_SPACE_USER` (or "local")."""
    if profile is not None:
        return profile.username
    if os.environ.get("SPACE_ID"):
        raise MobiusError("sign in with Hugging Face to convert a model")
    return os.environ.get(SPACE_USER_ENV) or "local"


def progress_html(job: Job) -> str:
    """A small table: one progress bar per variant, then the job's state and stage."""
    percent: dict[str, float] = {}
    note: dict[str, str] = {}
    for event in job.progress:
        if event.get("variant") and event.get("percent") is not None:
            percent[event["variant"]] = event["percent"]
            note[event["variant"]] = event.get("message") or ""
    rows = []
    for ep, dtype in ((e, d) for e in job.request.eps for d in job.request.dtypes):
        folder = model_cards.variant_folder(ep, dtype)
        value = percent.get(folder, 0.0)
        rows.append(
            f"<tr><td>{html.escape(folder)}</td><td><progress max='100' value='{value:.0f}'>"
            f"</progress> {value:.0f}%</td><td>{html.escape(note.get(folder, 'waiting'))}</td></tr>"
        )
    stage = f", {job.stage}" if job.state == "running" and job.stage else ""
    return (
        f"<p id='job-state'>Job <code>{job.id}</code>: <b>{job.state}</b>{stage}</p>"
        f"<table><tr><th>variant</th><th>progress</th><th></th></tr>{''.join(rows)}</table>"
    )


def report_rows(result: dict[str, Any] | None) -> list[list[Any]]:
    """The validation table: one row per variant folder."""
    rows = []
    for folder, r in sorted(((result or {}).get("reports") or {}).items()):
        rows.append(
            [
                folder,
                r.get("status"),
                r.get("reference"),
                _num(r.get("max_abs_diff")),
                _num(r.get("min_cosine")),
                _num(r.get("top1_agreement")),
                _num(r.get("tokens_per_second"), 1),
            ]
        )
    return rows


REPORT_HEADERS = ["variant", "status", "reference", "max abs diff", "min cosine", "top-1", "tok/s"]


def card_file(job: Job) -> str | None:
    """The published card (fetched from the PR or repo), else a summary of the reports."""
    result = job.result or {}
    url: str = result.get("url") or ""
    path = CARD_DIR / job.id / "README.md"
    if path.is_file():
        return str(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if match := PR_URL.search(url):
        repo, revision, name = match["repo"], f"refs/pr/{match['num']}", "pr"
    elif job.request.publish == "repo" and url:
        repo, revision, name = "/".join(url.rstrip("/").split("/")[-2:]), None, "repo"
    else:
        repo = revision = name = None
    if repo and name:
        try:
            card = Path(
                hf_hub_download(
                    repo, model_cards.card_path(name), revision=revision, etag_timeout=5
                )
            )
            path.write_bytes(card.read_bytes())
            return str(path)
        except (HfHubHTTPError, OSError, ValueError):
            pass
    if not result.get("reports"):
        return None
    lines = [f"# {job.request.source}: ONNX variants", "", "| " + " | ".join(REPORT_HEADERS) + " |"]
    lines.append("|" + "---|" * len(REPORT_HEADERS))
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in report_rows(result)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def result_markdown(job: Job) -> str:
    result = job.result or {}
    url = result.get("url")
    if not url:
        return result.get("message") or "converted (not published)"
    what = "Pull request" if PR_URL.search(url) else "Repository"
    return f"{what}: [{url}]({url}) ({result.get('outcome') or 'published'})"


def create_app(queue: JobQueue, *, login: bool | None = None) -> gr.Blocks:
    """The app around `queue`. `login`: show "Sign in with Hugging Face" (default: on a Space;
    off one, gradio's mocked login needs a local HF token)."""
    login = bool(os.environ.get("SPACE_ID")) if login is None else login

    def convert(
        model_id: str,
        eps: list[str],
        dtypes: list[str],
        target: str,
        private: bool,
        profile: gr.OAuthProfile | None,
    ) -> Iterator[tuple[Any, ...]]:
        """Submit a conversion, then stream (progress, log, result link, reports, card, error)."""
        empty = ("", "", "", [], None)
        try:
            requester = requester_of(profile)
            publish = TARGETS.get(target, target)
            if explained := explain_pairs(eps or [], dtypes or []):
                raise MobiusError(explained.replace("⚠️ ", "").replace("\n\n", "; "))
            request = ConversionRequest(
                source=(model_id or "").strip(),
                eps=tuple(eps or ()),
                dtypes=tuple(dtypes or ()),
                publish=publish,
                namespace=requester if publish == "repo" else None,
                private=bool(private) and publish == "repo",
                requester=requester,
                origin="space",
            )
            job = queue.get(queue.submit(request))
        except (MobiusError, ValueError) as err:
            yield (*empty, f"⚠️ {_line(err)}")
            return
        except Exception as err:  # the page shows a sentence, never a traceback
            yield (*empty, f"⚠️ internal error ({type(err).__name__}): {_line(err)}")
            return
        while True:
            log = "\n".join(job.log[-200:])
            if job.state == "succeeded":
                rows = report_rows(job.result)
                yield progress_html(job), log, result_markdown(job), rows, card_file(job), ""
                return
            if job.state == "failed":
                yield (
                    progress_html(job),
                    log,
                    "",
                    report_rows(job.result),
                    None,
                    (f"⚠️ the conversion failed: {job.error}"),
                )
                return
            yield progress_html(job), log, "", [], None, ""
            time.sleep(POLL_S)
            job = queue.get(job.id)

    with gr.Blocks(title="mobius: ONNX conversions") as demo:
        gr.Markdown("# mobius\nConvert a Hugging Face model to validated ONNX packages.")
        with gr.Tab("Convert"):
            if login:
                gr.LoginButton()
            else:
                gr.Markdown(f"Running locally as **{requester_of(None)}** (no sign-in).")
            model = gr.Textbox(label="Model id", placeholder="namespace/name", elem_id="model-id")
            model_status = gr.Markdown(elem_id="model-status")
            eps = gr.CheckboxGroup(
                list(EXECUTION_PROVIDERS), value=["cpu"], label="Execution providers", elem_id="eps"
            )
            dtypes = gr.CheckboxGroup(list(DTYPES), value=["f32"], label="Dtypes", elem_id="dtypes")
            pairs = gr.Markdown(elem_id="pairs")
            with gr.Row():
                target = gr.Radio(list(TARGETS), value=next(iter(TARGETS)), label="Deliver as")
                private = gr.Checkbox(label="Private (new repo only)")
            button = gr.Button("Convert", variant="primary", elem_id="convert")
            error = gr.Markdown(elem_id="error")
            progress = gr.HTML(elem_id="progress")
            link = gr.Markdown(elem_id="result-link")
            reports = gr.Dataframe(headers=REPORT_HEADERS, label="Validation", interactive=False)
            card = gr.File(label="Model card")
            log = gr.Textbox(label="Log", lines=10, max_lines=20, autoscroll=True)

            def check(model_id: str, token: gr.OAuthToken | None) -> str:
                return check_model(model_id, token.token if token else None)

            model.blur(check, model, model_status, show_progress="hidden", api_name=False)
            model.submit(check, model, model_status, show_progress="hidden", api_name=False)
            model.change(
                check, model, model_status, show_progress="hidden", api_name=False,
                trigger_mode="always_last",
            )  # fmt: skip
            for box in (eps, dtypes):
                box.change(explain_pairs, [eps, dtypes], pairs, api_name=False)
            button.click(
                convert,
                [model, eps, dtypes, target, private],
                [progress, log, link, reports, card, error],
                api_name="convert",
                concurrency_limit=None,
            )
        with gr.Tab("Browse"):
            with gr.Row():
                arch = gr.Dropdown(
                    ["any"], value="any", label="Architecture", allow_custom_value=True
                )
                ep_filter = gr.Dropdown(["any", *EXECUTION_PROVIDERS], value="any", label="EP")
                dtype_filter = gr.Dropdown(["any", *DTYPES], value="any", label="Dtype")
                refresh = gr.Button("Refresh")
            table = gr.Markdown(elem_id="browse")

            def browse(arch_: str, ep: str, dtype: str) -> tuple[Any, str]:
                rows = browse_rows(queue)
                choices = ["any", *sorted({r["architecture"] for r in rows})]
                return gr.Dropdown(choices=choices), browse_markdown(rows, arch_, ep, dtype)

            filters = [arch, ep_filter, dtype_filter]
            refresh.click(browse, filters, [arch, table], api_name="browse")
            for f in filters:
                f.input(browse, filters, [arch, table], api_name=False)
        with gr.Tab("Status"):
            status = gr.Markdown(elem_id="status")
            gr.Button("Refresh").click(
                lambda: status_markdown(queue), None, status, api_name="status"
            )
        demo.load(lambda: status_markdown(queue), None, status, api_name=False)
    return demo


# -- browse and status -------------------------------------------------------------------------
def browse_rows(queue: JobQueue, limit: int = 200) -> list[dict[str, Any]]:
    """One row per published variant: from succeeded jobs, then from the Hub's `mobius` tag."""
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for job in queue.recent(limit):
        url = (job.result or {}).get("url")
        if job.state != "succeeded" or not url:
            continue
        seen.add(url)
        arch = _architecture(job.request.source)
        for folder, r in sorted((job.result or {}).get("reports", {}).items()):
            rows.append(_row("job", job.request.source, arch, r, url, folder))
    try:
        models = list(HfApi().list_models(filter="mobius", limit=limit, expand=["config"]))
    except (HfHubHTTPError, OSError, ValueError):
        models = []  # the Hub is optional here: the job store still answers
    for m in models:
        url = f"{HfApi().endpoint}/{m.id}"
        if url in seen:
            continue
        arch = (m.config or {}).get("model_type") or "?"
        variants = [t for t in m.tags or [] if re.fullmatch(r"[a-z]+-(f32|f16|bf16|int4)", t)]
        for v in variants or ["?-?"]:
            ep, dtype = v.split("-", 1)
            rows.append(_row("hub", m.id, arch, {"ep": ep, "dtype": dtype}, url, v))
    return rows


def browse_markdown(rows: list[dict[str, Any]], arch: str, ep: str, dtype: str) -> str:
    keep = [
        r
        for r in rows
        if arch in ("any", r["architecture"])
        and ep in ("any", r["ep"])
        and dtype in ("any", r["dtype"])
    ]
    if not keep:
        return "No conversions match."
    head = "| source | architecture | variant | status | max abs diff | top-1 | link |\n"
    head += "|---|---|---|---|---|---|---|\n"
    return head + "\n".join(
        f"| {r['source']} | {r['architecture']} | {r['variant']} | {r['status']} | "
        f"{r['max_abs_diff']} | {r['top1']} | [{r['from']}]({r['url']}) |"
        for r in keep
    )


def status_markdown(queue: JobQueue) -> str:
    active = queue.active()
    queued = sum(j.state == "queued" for j in active)
    running = [j for j in active if j.state == "running"]
    failures = [j for j in queue.recent(50) if j.state == "failed"][:5]
    lines = [f"**Queue:** {queued} waiting, {len(running)} running", ""]
    lines += [f"- running: `{j.request.source}` ({j.stage or 'starting'})" for j in running]
    lines += ["", "**Recent failures:**" if failures else "No recent failures."]
    lines += [f"- `{j.request.source}`: {j.error}" for j in failures]
    return "\n".join(lines)


def _row(origin: str, source: str, arch: str, r: dict[str, Any], url: str, variant: str) -> dict:
    return {
        "from": origin,
        "source": source,
        "architecture": arch,
        "variant": variant.removeprefix("onnx/"),
        "ep": r.get("ep", "?"),
        "dtype": r.get("dtype", "?"),
        "status": r.get("status", "?"),
        "max_abs_diff": _num(r.get("max_abs_diff")),
        "top1": _num(r.get("top1_agreement")),
        "url": url,
    }


@lru_cache(maxsize=512)
def _architecture(source: str) -> str:
    try:
        info = HfApi().model_info(source, timeout=HUB_TIMEOUT_S)
        return (info.config or {}).get("model_type") or "?"
    except (HfHubHTTPError, OSError, ValueError):
        return "?"


def _json(path: Path) -> Any:
    import json

    return json.loads(path.read_text())


def _num(value: Any, digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}g}"


def _line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


# -- a Hub Space: `demo` built on first use from the environment -------------------------------
_demo: gr.Blocks | None = None


def space_queue() -> JobQueue:
    """The queue from `$MOBIUS_DATA_DIR` / `$MOBIUS_REDIS_URL` (embedded SQLite by default)."""
    return JobQueue()  # reads both variables itself


def __getattr__(name: str) -> Any:
    """`demo`, for `gradio space_app/app.py` and Spaces: created on first access, so importing
    this module starts nothing."""
    global _demo
    if name != "demo":
        raise AttributeError(name)
    if _demo is None:
        _demo = create_app(space_queue())
    return _demo


def serve(
    host: str = "127.0.0.1",
    port: int = 7860,
    queue: JobQueue | None = None,
    worker: bool = True,
) -> None:
    """Run the app until interrupted; with `worker`, an in-process worker consumes the queue
    (leave it off when `mobius worker` processes share a Redis queue)."""
    queue = queue or space_queue()
    app = create_app(queue)
    if not worker:
        app.launch(server_name=host, server_port=port)
        return
    with queue.worker():
        app.launch(server_name=host, server_port=port)


if __name__ == "__main__":
    on_space = bool(os.environ.get("SPACE_ID"))
    serve("0.0.0.0" if on_space else "127.0.0.1", int(os.environ.get("PORT", 7860)))
