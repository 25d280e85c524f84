"""The Gradio Space: Convert (form, live progress, result), Browse and Status tabs.

    demo = create_app(JobQueue(...))       # tests and `mobius space` build it around a queue
    python space_app/app.py                 # a Hub Space (`app_file`): queue from the environment

The app only submits `ConversionRequest`s and reads jobs back; workers do the work (an
in-process one in the embedded default). The Hub is asked as the visitor: with the signed-in
user's OAuth token, else anonymously (public repos only). The service's `HF_TOKEN` only
publishes (a pull request, or a repo in a namespace it may write); without it the Space offers
downloads only. See docs/space.md, "Security".
"""

from __future__ import annotations

import html
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script (a Space's app_file): the repo root is the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gradio as gr
import httpx2
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
)

import model_cards
from converter.build import MAX_CONFIG_BYTES, read_config
from converter.config import model_type_of
from converter.errors import MobiusError
from converter.execution_providers import DTYPES, EXECUTION_PROVIDERS
from converter.features import FEATURES, STATIC_CACHE
from converter.registry import families
from converter.repo_files import is_repo_id
from converter.validate.report import component_diffs
from model_cards import variant_order
from pipeline.convert import TOKEN_ENV
from pipeline.jobs import ConversionRequest, Job, JobQueue
from pipeline.publish import MANIFEST, writable_namespaces
from pipeline.request import BadRequest, check_variants

SPACE_USER_ENV = "MOBIUS_SPACE_USER"  # the requester when nobody signs in (local runs only)
ANONYMOUS = "anonymous"  # the requester of visitors who did not sign in on a Space
POLL_S = 0.5
HUB_TIMEOUT_S = 5.0
DOWNLOAD = "Download (zip)"
TARGETS = {
    "Pull request on the source repo": "pr",
    "New repo in my namespace": "repo",
    DOWNLOAD: "none",
}
CARD_DIR = Path(tempfile.gettempdir()) / "mobius-space-cards"
PR_URL = re.compile(r"/(?P<repo>[^/]+/[^/]+)/discussions/(?P<num>\d+)$")
HUB_ERRORS = (HfHubHTTPError, httpx2.TransportError, OfflineModeIsEnabled)
# Requesters of these origins are Hub user names (a GitHub login may name someone else).
HUB_USER_ORIGINS = ("space", "hub-mention")
OTHERS_PRIVATE_JOB = (
    "this commit of '{source}' was converted before at another user's request; the results of "
    "a private model are shown only to whoever asked for them"
)


# -- who is asking -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Visitor:
    """Who uses the page: `name` is the requester; `token` reads the Hub as them (the signed-in
    user's OAuth token, or False: anonymous, public repos only)."""

    name: str
    token: str | bool = False

    @property
    def signed_in(self) -> bool:
        return self.token is not False


def on_space() -> bool:
    return bool(os.environ.get("SPACE_ID"))


def visitor_of(profile: gr.OAuthProfile | None, oauth: gr.OAuthToken | None) -> Visitor:
    """The signed-in user, else an anonymous visitor: `anonymous` on a Space, the operator
    (`$MOBIUS_SPACE_USER`, default "local") off one. A token without a signed-in profile (an API
    call that supplies one) is ignored: the name and the access must be the same person's."""
    if profile is not None and oauth is not None and oauth.token:
        return Visitor(profile.username, oauth.token)
    if on_space():
        return Visitor(ANONYMOUS)
    return Visitor(os.environ.get(SPACE_USER_ENV) or "local")


def may_see(job: Job, visitor: Visitor) -> bool:
    """A job from a private or gated source, or exported to a private repo, is its requester's;
    every other job is public."""
    if not (job.private or job.request.private):
        return True
    return (
        visitor.signed_in
        and job.request.origin in HUB_USER_ORIGINS
        and job.request.requester == visitor.name
    )


def service_token() -> str | None:
    """The service bot's token, which publishes; None: publishing is off (downloads only)."""
    return os.environ.get(TOKEN_ENV) or None


# -- model check as you type -----------------------------------------------------------------
def check_model(model_id: str, token: str | bool = False) -> str:
    """One markdown line: does the repo exist, is its architecture supported, how big is it.
    The Hub is asked with `token` (the visitor's; False: anonymously)."""
    model_id = model_id.strip()
    if not model_id:
        return ""
    if not is_repo_id(model_id):
        return f"❌ `{model_id}` is not a Hub model id (namespace/name)"
    try:
        info = HfApi(token=token).model_info(model_id, files_metadata=True, timeout=HUB_TIMEOUT_S)
        model_type = model_type_of(_remote_config(model_id, info, token))
    except GatedRepoError:
        return f"🔒 `{model_id}` is gated: sign in and accept its terms on the Hub first"
    except RepositoryNotFoundError:
        return f"❌ `{model_id}` was not found on the Hub (or it is private)"
    except (*HUB_ERRORS, OSError) as err:
        return f"⚠️ {_hub_trouble(err, f'`{model_id}` was not checked')}"
    except (MobiusError, ValueError) as err:
        return f"❌ `{model_id}`: {_line(err)}"
    size = sum(s.size or 0 for s in info.siblings or [] if s.rfilename.endswith(".safetensors"))
    weights = model_cards.human_size(size) if size else "no safetensors weights"
    if model_type not in families():
        return f"❌ `{model_id}`: architecture `{model_type}` is not supported ({weights})"
    return f"✅ `{model_id}`: `{model_type}` ({families()[model_type].task}), {weights}"


def _remote_config(model_id: str, info: Any, token: str | bool) -> dict:
    """config.json of `info`'s commit, refused by its listed size before any download. It is
    read from a throwaway cache: a private repo's file must not linger in a shared one."""
    listed = next((s for s in info.siblings or [] if s.rfilename == "config.json"), None)
    if listed is None:
        raise MobiusError("has no config.json: not a transformers model")
    if (listed.size or 0) > MAX_CONFIG_BYTES:
        raise MobiusError(
            f"config.json is too large ({model_cards.human_size(listed.size)}; the converter "
            f"reads up to {model_cards.human_size(MAX_CONFIG_BYTES)})"
        )
    with tempfile.TemporaryDirectory(prefix="mobius-check-") as cache:
        path = hf_hub_download(
            model_id,
            "config.json",
            revision=info.sha,
            token=token,
            cache_dir=cache,
            etag_timeout=HUB_TIMEOUT_S,
        )
        return read_config(Path(path))


def explain_pairs(eps: list[str], dtypes: list[str]) -> str:
    """A markdown line naming the chosen (ep, dtype) pairs no EP runs, e.g. bf16 on cpu."""
    try:
        check_variants(tuple(eps), tuple(dtypes))
    except BadRequest as err:
        return f"⚠️ {err}"
    return ""


# -- converting --------------------------------------------------------------------------------
def space_request(
    model_id: str,
    eps: list[str],
    dtypes: list[str],
    target: str,
    private: bool,
    who: Visitor,
    features: list[str] | None = None,
    max_seq_len: float | None = None,
    release: bool = False,
) -> ConversionRequest:
    """The request the form describes, or MobiusError with the reason it cannot be served.
    The advanced options: build `features`, `max_seq_len` (sent only with static-cache, whose
    buffers it sizes) and `release`."""
    publish = TARGETS.get(target, target)
    features = tuple(features or ())
    if STATIC_CACHE not in features or max_seq_len is None:
        max_seq_len = None
    elif max_seq_len != int(max_seq_len):
        raise BadRequest(f"the maximum sequence length must be a whole number, not {max_seq_len}")
    return ConversionRequest(
        source=(model_id or "").strip(),
        eps=tuple(eps or ()),
        dtypes=tuple(dtypes or ()),
        publish=publish,
        namespace=repo_namespace(who) if publish == "repo" else None,
        private=bool(private) and publish == "repo",
        requester=who.name,
        origin="space",
        features=features,
        release=bool(release),
        max_seq_len=None if max_seq_len is None else int(max_seq_len),
    )


def repo_namespace(who: Visitor) -> str:
    """Where "a new repo in my namespace" goes: the signed-in user's namespace; on a local run
    (no sign-in) the service token's own. Refused unless the service may create repos there."""
    if not who.signed_in and on_space():
        raise MobiusError("sign in with Hugging Face to publish a repo in your namespace")
    try:
        writable = writable_namespaces(service_token())
    except HUB_ERRORS as err:
        raise MobiusError(_hub_trouble(err, "where it may publish was not checked")) from err
    if not writable:
        raise MobiusError("this service's token is read-only: it cannot create repos")
    namespace = who.name if who.signed_in else writable[0]
    if namespace not in writable:
        raise MobiusError(
            f"this service cannot create repos in '{namespace}' (it can in: "
            f"{', '.join(writable)}): choose a pull request or a download"
        )
    return namespace


def progress_html(job: Job) -> str:
    """A small table: one progress bar per variant, then the job's state and stage."""
    percent: dict[str, float] = {}
    note: dict[str, str] = {}
    for event in job.progress:
        if event.get("variant") and event.get("percent") is not None:
            percent[event["variant"]] = event["percent"]
            note[event["variant"]] = event.get("message") or ""
    rows = []
    for variant in job.request.variants:
        folder = model_cards.variant_folder(*variant.split("-", 1))
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
    """The validation table: one row per variant folder, in card order."""
    reports = (result or {}).get("reports") or {}
    return [
        [
            folder,
            r.get("status"),
            r.get("reference"),
            _num(r.get("max_abs_diff")),
            _num(r.get("min_cosine")),
            _num(r.get("top1_agreement")),
            _rate(r.get("tokens_per_second")),
            component_diffs(r),
        ]
        for folder, r in sorted(reports.items(), key=lambda item: variant_order(item[0]))
    ]


REPORT_HEADERS = [
    "variant",
    "status",
    "reference",
    "max abs diff",
    "min cosine",
    "top-1",
    "tok/s",
    "components",  # a VLM's image features and inputs_embeds, each against the reference
]


def card_file(job: Job, who: Visitor) -> str | None:
    """The published card (fetched from the PR or repo as `who`), else a summary of the
    reports; None for someone else's private job."""
    if not may_see(job, who):
        return None
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
            with tempfile.TemporaryDirectory(prefix="mobius-card-") as cache:
                card = hf_hub_download(
                    repo,
                    model_cards.card_path(name),
                    revision=revision,
                    token=who.token,
                    cache_dir=cache,
                    etag_timeout=HUB_TIMEOUT_S,
                )
                path.write_bytes(Path(card).read_bytes())
            return str(path)
        except (*HUB_ERRORS, OSError, ValueError):
            pass
    if not result.get("reports"):
        return None
    lines = [f"# {job.request.source}: ONNX variants", "", "| " + " | ".join(REPORT_HEADERS) + " |"]
    lines.append("|" + "---|" * len(REPORT_HEADERS))
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in report_rows(result)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def archive_file(job: Job, who: Visitor) -> tuple[str | None, str]:
    """The download-only zip (packages and card) for `who`, and a sentence when it cannot be
    served: it is written on the worker's machine, in the queue's results folder."""
    archive = (job.result or {}).get("archive")
    if not archive or not may_see(job, who):
        return None, ""
    if not Path(archive).is_file():
        return None, (
            "⚠️ the archive is not on this machine: results are kept for a week, on the "
            "worker's machine (give the app and the workers one MOBIUS_RESULTS_DIR)"
        )
    return archive, ""


def result_markdown(job: Job) -> str:
    result = job.result or {}
    url = result.get("url")
    if not url:
        if result.get("archive"):
            return "Converted: download the packages and the card below."
        return result.get("message") or "converted (not published)"
    what = "Pull request" if PR_URL.search(url) else "Repository"
    return f"{what}: [{url}]({url}) ({result.get('outcome') or 'published'})"


def submit_and_follow(
    queue: JobQueue,
    who: Visitor,
    model_id: str,
    eps: list[str],
    dtypes: list[str],
    target: str,
    private: bool,
    *advanced: Any,
) -> Iterator[tuple[Any, ...]]:
    """The Convert button: submit the form's request as `who` (`advanced`: space_request's
    features, max_seq_len and release), then yield (progress, log, result link, reports, card,
    archive, error) until the job ends."""
    empty = ("", "", "", [], None, None)
    try:
        request = space_request(model_id, eps, dtypes, target, private, who, *advanced)
        job = queue.get(queue.submit(request, read_as=who.token))
    except (MobiusError, ValueError) as err:
        yield (*empty, f"⚠️ {_line(err)}")
        return
    except Exception as err:  # the page shows a sentence, never a traceback
        yield (*empty, f"⚠️ internal error ({type(err).__name__}): {_line(err)}")
        return
    if not may_see(job, who):  # never expected: private jobs are keyed by their requester
        yield (*empty, f"⚠️ {OTHERS_PRIVATE_JOB.format(source=request.source)}")
        return
    while True:
        log = "\n".join(job.log[-200:])
        if job.state == "succeeded":
            rows = report_rows(job.result)
            archive, problem = archive_file(job, who)
            card = card_file(job, who)
            yield progress_html(job), log, result_markdown(job), rows, card, archive, problem
            return
        if job.state == "failed":
            failed = f"⚠️ the conversion failed: {job.error}"
            yield progress_html(job), log, "", report_rows(job.result), None, None, failed
            return
        yield progress_html(job), log, "", [], None, None, ""
        time.sleep(POLL_S)
        job = queue.get(job.id)


def create_app(queue: JobQueue, *, login: bool | None = None) -> gr.Blocks:
    """The app around `queue`. `login`: show "Sign in with Hugging Face" (default: on a Space;
    off one, gradio's mocked login needs a local HF token)."""
    login = on_space() if login is None else login
    publishing = service_token() is not None
    gr.set_static_paths([queue.results_dir])  # archives are served from where workers wrote them

    def convert(
        model_id: str,
        eps: list[str],
        dtypes: list[str],
        target: str,
        private: bool,
        features: list[str] | None = None,
        max_seq_len: float | None = None,
        release: bool = False,
        profile: gr.OAuthProfile | None = None,
        oauth: gr.OAuthToken | None = None,
    ) -> Iterator[tuple[Any, ...]]:
        """Submit a conversion, then stream (progress, log, result link, reports, card, archive,
        error)."""
        form = (model_id, eps, dtypes, target, private, features, max_seq_len, release)
        yield from submit_and_follow(queue, visitor_of(profile, oauth), *form)

    with gr.Blocks(title="mobius: ONNX conversions") as demo:
        gr.Markdown("# mobius\nConvert a Hugging Face model to validated ONNX packages.")
        with gr.Tab("Convert"):
            if login:
                gr.LoginButton()
            else:
                who = visitor_of(None, None)
                gr.Markdown(f"Running locally as **{who.name}** (no sign-in).")
            if not publishing:
                gr.Markdown(
                    f"Publishing is off on this service (it has no `{TOKEN_ENV}`): conversions "
                    "are offered as a download (zip) of the packages and the model card.",
                    elem_id="publishing-off",
                )
            model = gr.Textbox(label="Model id", placeholder="namespace/name", elem_id="model-id")
            model_status = gr.Markdown(elem_id="model-status")
            eps = gr.CheckboxGroup(
                list(EXECUTION_PROVIDERS), value=["cpu"], label="Execution providers", elem_id="eps"
            )
            dtypes = gr.CheckboxGroup(list(DTYPES), value=["f32"], label="Dtypes", elem_id="dtypes")
            pairs = gr.Markdown(elem_id="pairs")
            with gr.Row():
                choices = list(TARGETS) if publishing else [DOWNLOAD]
                target = gr.Radio(choices, value=choices[0], label="Deliver as", elem_id="target")
                private = gr.Checkbox(label="Private (new repo only)", visible=publishing)
            with gr.Accordion("Advanced", open=False, elem_id="advanced"):
                features = gr.CheckboxGroup(
                    [(f"{name}: {about}", name) for name, about in sorted(FEATURES.items())],
                    value=[],
                    label="Build features",
                    elem_id="features",
                )
                max_seq_len = gr.Number(
                    None,
                    label=f"Maximum sequence length ({STATIC_CACHE} only)",
                    precision=0,
                    minimum=1,
                    visible=STATIC_CACHE in FEATURES,
                    elem_id="max-seq-len",
                )
                release = gr.Checkbox(
                    label="Release build: graphs without debug and provenance metadata",
                    elem_id="release",
                )
            button = gr.Button("Convert", variant="primary", elem_id="convert")
            error = gr.Markdown(elem_id="error")
            progress = gr.HTML(elem_id="progress")
            link = gr.Markdown(elem_id="result-link")
            reports = gr.Dataframe(headers=REPORT_HEADERS, label="Validation", interactive=False)
            card = gr.File(label="Model card", elem_id="card")
            archive = gr.File(label="Download: packages and card", elem_id="archive")
            log = gr.Textbox(label="Log", lines=10, max_lines=20, autoscroll=True)

            def check(
                model_id: str, profile: gr.OAuthProfile | None, oauth: gr.OAuthToken | None
            ) -> str:
                return check_model(model_id, visitor_of(profile, oauth).token)

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
                [model, eps, dtypes, target, private, features, max_seq_len, release],
                [progress, log, link, reports, card, archive, error],
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

            def browse(
                arch_: str,
                ep: str,
                dtype: str,
                profile: gr.OAuthProfile | None,
                oauth: gr.OAuthToken | None,
            ) -> tuple[Any, str]:
                rows, note = browse_rows(queue, visitor_of(profile, oauth))
                choices = ["any", *sorted({r["architecture"] for r in rows})]
                shown = browse_markdown(rows, arch_, ep, dtype)
                return gr.Dropdown(choices=choices), f"{note}\n\n{shown}" if note else shown

            filters = [arch, ep_filter, dtype_filter]
            refresh.click(browse, filters, [arch, table], api_name="browse")
            for f in filters:
                f.input(browse, filters, [arch, table], api_name=False)
        with gr.Tab("Status"):
            status = gr.Markdown(elem_id="status")

            def show_status(profile: gr.OAuthProfile | None, oauth: gr.OAuthToken | None) -> str:
                return status_markdown(queue, visitor_of(profile, oauth))

            gr.Button("Refresh").click(show_status, None, status, api_name="status")
        demo.load(show_status, None, status, api_name=False)
    return demo


# -- browse and status -------------------------------------------------------------------------
def browse_rows(queue: JobQueue, who: Visitor, limit: int = 200) -> tuple[list[dict], str]:
    """One row per published variant, from this service's succeeded jobs that `who` may see,
    then from the Hub's `mobius` tag as `who` sees it; and a note when the Hub is unreachable."""
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for job in queue.recent(limit):
        url = (job.result or {}).get("url")
        if job.state != "succeeded" or not url or not may_see(job, who):
            continue
        seen.add(url)
        arch = _architecture(job.request.source)
        reports = (job.result or {}).get("reports", {})
        for folder in sorted(reports, key=variant_order):
            rows.append(_row(job.request.source, arch, reports[folder], url, folder))
    try:
        models = list(
            HfApi(token=who.token).list_models(
                filter="mobius", limit=limit, expand=["config", "siblings"]
            )
        )
    except HUB_ERRORS as err:
        return rows, _hub_trouble(err, "only this service's conversions are listed")
    for m in models:
        url = f"{HfApi().endpoint}/{m.id}"
        if url in seen:
            continue
        arch = (m.config or {}).get("model_type") or "?"
        names = [s.rfilename for s in m.siblings or []]
        folders = [name.rsplit("/", 1)[0] for name in names if MANIFEST.fullmatch(name)]
        for folder in sorted(folders, key=variant_order) or ["?-?"]:
            ep, _, dtype = folder.removeprefix("onnx/").partition("-")
            rows.append(_row(m.id, arch, {"ep": ep, "dtype": dtype}, url, folder))
    return rows, ""


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
        f"{r['max_abs_diff']} | {r['top1']} | [{r['link']}]({r['url']}) |"
        for r in keep
    )


def status_markdown(queue: JobQueue, who: Visitor) -> str:
    """Queue length, running jobs and recent failures; others' private jobs are only counted."""
    active = queue.active()
    queued = sum(j.state == "queued" for j in active)
    running = [j for j in active if j.state == "running"]
    failures = [j for j in queue.recent(50) if j.state == "failed" and may_see(j, who)][:5]
    lines = [f"**Queue:** {queued} waiting, {len(running)} running", ""]
    lines += [
        f"- running: `{j.request.source}` ({j.stage or 'starting'})"
        if may_see(j, who)
        else "- running: a private model"
        for j in running
    ]
    lines += ["", "**Recent failures:**" if failures else "No recent failures."]
    lines += [f"- `{j.request.source}`: {j.error}" for j in failures]
    return "\n".join(lines)


def _row(source: str, arch: str, r: dict[str, Any], url: str, variant: str) -> dict:
    return {
        "source": source,
        "architecture": arch,
        "variant": variant.removeprefix("onnx/"),
        "ep": r.get("ep", "?"),
        "dtype": r.get("dtype", "?"),
        "status": r.get("status", "?"),
        "max_abs_diff": _num(r.get("max_abs_diff")),
        "top1": _num(r.get("top1_agreement")),
        "url": url,
        "link": "pull request" if PR_URL.search(url) else "repo",
    }


@lru_cache(maxsize=512)
def _architecture(source: str) -> str:
    """The source's model_type as anyone sees it ("?" for a private one)."""
    try:
        info = HfApi(token=False).model_info(source, timeout=HUB_TIMEOUT_S)
        return (info.config or {}).get("model_type") or "?"
    except (*HUB_ERRORS, ValueError):
        return "?"


def _hub_trouble(err: BaseException, consequence: str) -> str:
    """A sentence for a Hub that failed or could not be reached."""
    if isinstance(err, HfHubHTTPError):
        return f"the Hub answered with an error ({_line(err)}), so {consequence}; try again"
    return f"the Hub cannot be reached right now, so {consequence}; try again later"


def _num(value: Any, digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}g}"


def _rate(value: Any) -> str:
    """Tokens per second as people read them: 250.3."""
    return "" if value is None else f"{value:.1f}"


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
    serve("0.0.0.0" if on_space() else "127.0.0.1", int(os.environ.get("PORT", 7860)))
