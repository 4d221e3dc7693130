"""``check`` must accept exactly the ensembles the real Triton server loads.

The corpus (``tests/corpus/<case>/``, built by ``tests/corpus/build_corpus.py``) holds small
repositories, valid and broken.  One embedded tritonserver (explicit model control) runs on
a temporary repository; each case is copied into it, its ensemble loaded through the
repository API (which loads the composing models), Triton's verdict and error message
recorded, and everything unloaded again.  The test fails on any case where ``check``'s
verdict differs from Triton's.

Without a server the recorded verdicts in each ``case.json`` are compared instead.

Record Triton's verdicts and messages again (updates ``case.json`` and ``MESSAGES.md``)::

    python tests/test_corpus_agreement.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from triton_kitchen.config import load_repository  # noqa: E402
from triton_kitchen.ensemble import has_errors, validate_model  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "case.json").is_file())


def case_meta(name: str) -> dict:
    return json.loads((CORPUS / name / "case.json").read_text())


def our_verdict(name: str, root: Path = CORPUS):
    """(loads?, problems) as ``check`` sees the case's repository."""
    meta = case_meta(name)
    repo = load_repository(root / name)
    problems = validate_model(meta["load"], repo, with_dependencies=True)
    return not has_errors(problems), problems


# ---------------------------------------------------------------------------------------------
# the real server


class CorpusRunner:
    """Loads corpus cases one after another into one explicit-mode tritonserver."""

    def __init__(self, server, repo: Path) -> None:
        import tritonclient.http as httpclient

        self.server = server
        self.repo = repo
        self.client = httpclient.InferenceServerClient(server.http_url, network_timeout=60.0)
        self.headers = server.repo_key
        self.stamp = time.time()
        self.count = 0

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

    def _clear(self) -> None:
        try:
            index = self.client.get_model_repository_index(headers=self.headers)
        except Exception:  # noqa: BLE001
            index = []
        for m in index:
            if m.get("state") in ("READY", "LOADING", "UNLOADING"):
                try:
                    self.client.unload_model(m["name"], headers=self.headers)
                except Exception:  # noqa: BLE001
                    pass
        for p in list(self.repo.iterdir()):
            shutil.rmtree(p, ignore_errors=True)

    def _copy(self, name: str) -> str:
        """Copy a case under fresh model names (``k<n>_<name>``) and return the prefix.

        Triton remembers every model it has polled: when a later config with the same name
        fails to poll, it may keep (and load) the earlier one.  So no name is ever reused
        within one server: directories, top-level ``name:`` and steps' ``model_name:`` get a
        prefix unique to this load; messages are read back without it.
        """
        self.count += 1
        prefix = f"k{self.count}_"
        src = CORPUS / name
        models = [p.name for p in src.iterdir() if p.is_dir()]
        for m in models:
            shutil.copytree(src / m, self.repo / (prefix + m), copy_function=shutil.copy)
        pattern = re.compile(
            r'(^name:\s*"|model_name:\s*")(' + "|".join(re.escape(m) for m in models) + r')"', re.M
        )
        for cfg in list(self.repo.glob("*/config.pbtxt")) + list(self.repo.glob("*/configs/*.pbtxt")):
            text = cfg.read_text(errors="surrogateescape")
            cfg.write_text(pattern.sub(lambda mt: mt.group(1) + prefix + mt.group(2) + '"', text), errors="surrogateescape")
        self.stamp += 10
        for d, dirs, files in os.walk(self.repo):
            for f in dirs + files:
                os.utime(os.path.join(d, f), (self.stamp, self.stamp))
        return prefix

    def run(self, name: str) -> tuple[bool, str | None]:
        meta = case_meta(name)
        prefix = self._copy(name)
        pos = self._log_size()
        try:
            self.client.load_model(prefix + meta["load"], headers=self.headers)
            ok, message = True, None
        except Exception as e:  # noqa: BLE001 - any refusal is Triton's verdict
            ok, message = False, self._message(str(e), prefix + meta["load"], pos)
            message = message.replace(prefix, "")
        self._clear()
        return ok, message

    def _message(self, api: str, target: str, pos: int) -> str:
        time.sleep(0.05)
        errors = self._log_since(pos)
        msg = re.sub(r"^\[\d+\]\s*", "", api).strip()
        if "failed to poll from model repository" in msg:
            polls = [e for e in errors if e.startswith("Poll failed for model directory")]
            mine = [e for e in polls if e.startswith(f"Poll failed for model directory '{target}'")]
            pick = (mine or polls or [msg])[0]
            msg = re.sub(r"^Poll failed for model directory '[^']*': ", "", pick)
        msg = re.sub(r"^load failed for model '[^']*': ", "", msg)
        return msg.replace(str(self.repo), "<repo>").strip()


def _start_server(repo: Path):
    from triton_kitchen.server import EmbeddedServer

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


# ---------------------------------------------------------------------------------------------
# tests


def test_corpus_is_large_enough():
    assert len(CASES) >= 30
    verdicts = [case_meta(c)["triton_loads"] for c in CASES]
    assert verdicts.count(True) >= 10 and verdicts.count(False) >= 20


@pytest.mark.parametrize("case", CASES)
def test_recorded_verdict_agrees(case):
    """Offline: check agrees with the verdict recorded from Triton 2.51."""
    meta = case_meta(case)
    assert meta["triton_loads"] is not None, f"{case}: run python tests/test_corpus_agreement.py to record it"
    ours, problems = our_verdict(case)
    assert ours == meta["triton_loads"], (case, [p.message for p in problems])
    if not ours:
        first = next(p for p in problems if p.is_error)
        assert first.line and first.line >= 1
        assert first.code and first.message


@pytest.mark.slow
def test_live_agreement_with_triton(corpus_runner):
    """Every case loaded into the real server: 100 % agreement of verdicts."""
    disagree = []
    for case in CASES:
        triton_ok, triton_msg = corpus_runner.run(case)
        ours, problems = our_verdict(case)
        if ours != triton_ok:
            disagree.append((case, triton_ok, triton_msg, [p.message for p in problems if p.is_error][:2]))
        recorded = case_meta(case)["triton_loads"]
        assert recorded is None or recorded == triton_ok, f"{case}: recorded verdict is stale"
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
        for case in CASES:
            t0 = time.monotonic()
            ok, msg = runner.run(case)
            dt = time.monotonic() - t0
            meta = case_meta(case)
            meta["triton_loads"], meta["triton_message"] = ok, msg
            (CORPUS / case / "case.json").write_text(json.dumps(meta, indent=2) + "\n")
            ours, problems = our_verdict(case)
            agree += ours == ok
            first = next((p for p in problems if p.is_error), None)
            warn = next((p for p in problems if not p.is_error), None)
            rows.append((case, ok, ours, msg, first, warn))
            print(f"{case:40s} triton={ok!s:5s} check={ours!s:5s} {dt:5.2f}s {msg or ''}", flush=True)
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
        "Generated by `python tests/test_corpus_agreement.py` against the embedded tritonserver 2.51",
        "(explicit model control; each case's ensemble loaded through the repository API).",
        "",
        f"- cases: {len(rows)}; Triton loads {len(rows) - failing}, refuses {failing}",
        f"- verdicts in agreement: {agree}/{len(rows)}",
        f"- refused cases where `check`'s first error carries Triton's exact wording: {same}/{failing}",
        "",
        "Columns: Triton's load error (from the API, or from the server log when the API only says",
        "\"failed to poll from model repository\"); `check`'s first error (its own explanation); the",
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
