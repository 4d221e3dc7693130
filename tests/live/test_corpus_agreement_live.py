"""``check`` must accept exactly the ensembles the real Triton server loads.

The corpus (``tests/corpus/<case>/``, built by ``tests/corpus/build_corpus.py``) holds small
repositories, valid and broken.  One embedded tritonserver (explicit model control) runs on
a temporary repository; each case is copied into it, its ensemble loaded through the
repository API (which loads the composing models), Triton's verdict and error message
recorded, and everything unloaded again.  The test fails on any case where ``check``'s
verdict differs from Triton's.

Record Triton's verdicts and messages again (updates ``case.json`` and ``MESSAGES.md``)::

    python tests/live/test_corpus_agreement_live.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
for _path in (ROOT, ROOT / "tests"):  # run as a script (recording): the package and tests/_shared
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from _shared.corpus_agreement import CASES, CORPUS, case_meta, our_verdict  # noqa: E402

# ---------------------------------------------------------------------------------------------
# the real server


class CorpusRunner:
    """Loads corpus cases into one explicit-mode tritonserver, a few at a time.

    Triton remembers every model it has polled: when a later config with the same name fails
    to poll, it may keep (and load) the earlier one.  So no model name is ever reused within
    one server: each load copies its case under fresh names (``k<n>_<model>``: directories,
    the top-level ``name:`` and the steps' ``model_name:``), and messages are read back
    without the prefix.  Unique names also let cases load concurrently.
    """

    def __init__(self, server, repo: Path) -> None:
        self.server = server
        self.repo = repo
        self.headers = server.repo_key
        self.stamp = time.time()
        self.count = 0
        self.lock = threading.Lock()
        self.local = threading.local()

    @property
    def client(self):
        # tritonclient.http runs on gevent: one client per thread
        if getattr(self.local, "client", None) is None:
            import tritonclient.http as httpclient

            self.local.client = httpclient.InferenceServerClient(self.server.http_url, network_timeout=60.0)
        return self.local.client

    def _log_size(self) -> int:
        try:
            return self.server.log_file.stat().st_size
        except OSError:
            return 0

    def _log_since(self, pos: int) -> list[str]:
        try:
            with open(self.server.log_file, "rb") as f:
                f.seek(pos)
                text = f.read().decode("utf-8", errors="replace")
        except OSError:
            return []
        out = []
        for line in text.splitlines():
            if line.startswith("E") and "] " in line:
                msg = line.split("] ", 1)[1].strip().strip('"')
                out.append(msg)
        return out

    def _copy(self, name: str) -> tuple[str, list[str]]:
        with self.lock:
            self.count += 1
            prefix = f"k{self.count}_"
            self.stamp += 10
            stamp = self.stamp
        src = CORPUS / name
        models = [p.name for p in src.iterdir() if p.is_dir()]
        dirs = [self.repo / (prefix + m) for m in models]
        pattern = re.compile(
            r'(^name:\s*"|model_name:\s*")(' + "|".join(re.escape(m) for m in models) + r')"', re.M
        )
        for m, dst in zip(models, dirs, strict=True):
            tmp = self.repo / (".tmp-" + prefix + m)  # hidden until complete: Triton never sees half a copy
            shutil.copytree(src / m, tmp, copy_function=shutil.copy)
            for cfg in [tmp / "config.pbtxt", *tmp.glob("configs/*.pbtxt")]:
                if cfg.is_file():
                    text = cfg.read_text(errors="surrogateescape")
                    text = pattern.sub(lambda mt: mt.group(1) + prefix + mt.group(2) + '"', text)
                    cfg.write_text(text, errors="surrogateescape")
            # fresh, increasing modification times
            for d, subdirs, files in os.walk(tmp):
                for f in subdirs + files:
                    os.utime(os.path.join(d, f), (stamp, stamp))
            os.utime(tmp, (stamp, stamp))
            tmp.rename(dst)
        return prefix, [d.name for d in dirs]

    def _clear(self, names: list[str]) -> None:
        for n in names:
            try:
                self.client.unload_model(n, headers=self.headers)
            except Exception:  # noqa: BLE001 - not loaded, or already gone
                pass
        for n in names:
            shutil.rmtree(self.repo / n, ignore_errors=True)

    def run(self, name: str) -> tuple[bool, str | None]:
        """Triton's verdict on one case. A refusal other than the recorded one is asked once more: a refusal
        by configuration repeats itself, word for word, while a Python stub that failed to start on a loaded
        2-core CI machine does not (and a refusal that was never recorded is asked again too)."""
        ok, message = self._run_once(name)
        if not ok and message != case_meta(name).get("triton_message"):
            ok, message = self._run_once(name)
        return ok, message

    def _run_once(self, name: str) -> tuple[bool, str | None]:
        meta = case_meta(name)
        prefix, names = self._copy(name)
        pos = self._log_size()
        try:
            self.client.load_model(prefix + meta["load"], headers=self.headers)
            ok, message = True, None
        except Exception as e:  # noqa: BLE001 - any refusal is Triton's verdict
            ok, message = False, self._message(str(e), prefix, prefix + meta["load"], pos)
            message = message.replace(prefix, "")
        self._clear(names)
        return ok, message

    # a load mostly waits for Python stubs to start (about 1.4 s each, little CPU): six at once take 40 % of
    # the time three do, on two cores; twelve take no less than six
    def run_all(self, cases: list[str], workers: int = 6) -> dict[str, tuple[bool, str | None]]:
        """Every case's verdict. A server that died meanwhile is started again and asked again about each case
        that does not match its recording: Triton's python backend can abort on a busy machine (see
        EmbeddedServer.start), and the loads in flight then, and every later one, were refused for that, not
        for their configuration (a loaded CI run once saw "Connection refused" for a valid case)."""
        results = self._each(cases, workers)
        if not self.server.running:
            self.server.start(timeout=120)  # its ports may change: the next pool's threads make new clients
            again = [c for c, (ok, _) in results.items() if ok != case_meta(c)["triton_loads"]]
            try:  # what it said last, for whoever reads the warning (the restart kept its log beside the new one)
                last = self.server.log_file.with_suffix(".log.previous").read_text(errors="replace")
                last = " | ".join(last.strip().splitlines()[-3:])
            except OSError:
                last = "(no log)"
            warnings.warn(
                f"the corpus server died during the run; restarted, {len(again)} case(s) asked "
                f"again; its log ended: {last[-600:]}",
                stacklevel=2,
            )
            results.update(self._each(again, workers))
        return results

    def _each(self, cases: list[str], workers: int) -> dict[str, tuple[bool, str | None]]:
        self.local = threading.local()  # clients of a server that may be gone are not reused
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return dict(zip(cases, pool.map(self.run, cases), strict=True))

    def _message(self, api: str, prefix: str, target: str, pos: int) -> str:
        time.sleep(0.05)
        errors = [e for e in self._log_since(pos) if prefix in e]
        msg = re.sub(r"^\[\d+\]\s*", "", api).strip()
        if "failed to poll from model repository" in msg:
            polls = [e for e in errors if e.startswith("Poll failed for model directory")]
            mine = [e for e in polls if e.startswith(f"Poll failed for model directory '{target}'")]
            pick = (mine or polls or [msg])[0]
            msg = re.sub(r"^Poll failed for model directory '[^']*': ", "", pick)
        msg = re.sub(r"^load failed for model '[^']*': ", "", msg)
        return msg.replace(str(self.repo), "<repo>").strip()


def _start_server(repo: Path):
    from triton_kitchen.core.server import EmbeddedServer

    srv = EmbeddedServer(repo, http_port=0, grpc_port=0, metrics_port=0, load_models=None, build_models=False)
    srv.start(timeout=120)
    return srv


@pytest.fixture(scope="module")
def corpus_runner():
    tmp = Path(tempfile.mkdtemp(prefix="tk-corpus-"))
    repo = tmp / "repo"
    repo.mkdir()
    try:
        srv = _start_server(repo)
    except Exception as e:  # noqa: BLE001
        shutil.rmtree(tmp, ignore_errors=True)
        pytest.skip(f"embedded tritonserver unavailable: {e}")
    try:
        yield CorpusRunner(srv, repo)
    finally:
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.slow
def test_live_agreement_with_triton(corpus_runner):
    """Every case loaded into the real server: 100 % agreement of verdicts."""
    disagree = []
    results = corpus_runner.run_all(CASES)
    for case in CASES:
        triton_ok, triton_msg = results[case]
        ours, problems = our_verdict(case)
        if ours != triton_ok:
            disagree.append((case, triton_ok, triton_msg, [p.message for p in problems if p.is_error][:2]))
        recorded = case_meta(case)["triton_loads"]
        assert recorded is None or recorded == triton_ok, f"{case}: recorded verdict is stale ({triton_msg})"
    assert not disagree, disagree


# ---------------------------------------------------------------------------------------------
# recording


def _cell(s: str | None) -> str:
    return (s or "").replace("|", "\\|").replace("\n", " ")


def record() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="tk-corpus-"))
    repo = tmp / "repo"
    repo.mkdir()
    srv = _start_server(repo)
    rows = []
    agree = 0
    try:
        runner = CorpusRunner(srv, repo)
        t0 = time.monotonic()
        results = runner.run_all(CASES)
        print(f"{len(CASES)} cases loaded in {time.monotonic() - t0:.1f} s")
        for case in CASES:
            ok, msg = results[case]
            meta = case_meta(case)
            meta["triton_loads"], meta["triton_message"] = ok, msg
            (CORPUS / case / "case.json").write_text(json.dumps(meta, indent=2) + "\n")
            ours, problems = our_verdict(case)
            agree += ours == ok
            first = next((p for p in problems if p.is_error), None)
            warn = next((p for p in problems if not p.is_error), None)
            rows.append((case, ok, ours, msg, first, warn))
            print(f"{case:40s} triton={ok!s:5s} check={ours!s:5s} {msg or ''}", flush=True)
    finally:
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    def predicted(case, first):
        if first is None or not first.triton_message:
            return ""
        return first.triton_message.replace(str(CORPUS / case), "<repo>")

    same = sum(1 for r in rows if r[4] is not None and predicted(r[0], r[4]) == r[3])
    failing = sum(1 for r in rows if not r[1])
    lines = [
        "# Corpus: Triton's verdicts and messages vs `check`",
        "",
        "Generated by `python tests/live/test_corpus_agreement_live.py` against the embedded tritonserver 2.51",
        "(explicit model control; each case's ensemble loaded through the repository API).",
        "",
        f"- cases: {len(rows)}; Triton loads {len(rows) - failing}, refuses {failing}",
        f"- verdicts in agreement: {agree}/{len(rows)}",
        f"- refused cases where `check`'s first error carries Triton's exact wording: {same}/{failing}",
        "",
        "Columns: Triton's load error (from the API, or from the server log when the API only says",
        '"failed to poll from model repository"); `check`\'s first error (its own explanation); the',
        "wording `check` predicts for Triton (shown beside the explanation in the app).",
        "",
        "| case | Triton | check | Triton's message | check's message | predicted Triton wording |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for case, ok, ours, msg, first, warn in rows:
        mine = first.message if first else (f"warning: {warn.message}" if warn else "")
        pred = predicted(case, first)
        mark = "" if ours == ok else " **DISAGREE**"
        if pred and msg and pred != msg:
            pred += " *(differs)*"
        lines.append(
            f"| `{case}` | {'loads' if ok else 'refuses'} | {'loads' if ours else 'refuses'}{mark} | "
            f"{_cell(msg)} | {_cell(mine)} | {_cell(pred)} |"
        )
    (CORPUS / "MESSAGES.md").write_text("\n".join(lines) + "\n")
    print(f"agreement {agree}/{len(rows)}; same wording {same}/{failing}")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(record())
