"""The sample photos are committed files: each one the app offers is there, an RGB JPEG, named in the README
beside them with its origin, and travels into the Docker image."""

from __future__ import annotations

import fnmatch
import io
from pathlib import Path

import pytest
from PIL import Image

from triton_kitchen.core.samples import SAMPLE_PHOTOS, SAMPLES_DIR, sample_image, sample_jpeg

ROOT = Path(__file__).resolve().parents[2]
FOLDER = Path(str(SAMPLES_DIR))


def test_the_folder_holds_the_offered_photos_and_their_readme_only():
    assert sorted(p.name for p in FOLDER.iterdir()) == sorted(
        [*(f"{n}.jpg" for n in SAMPLE_PHOTOS), "README.md"]
    )


@pytest.mark.parametrize("name", SAMPLE_PHOTOS)
def test_each_photo_is_an_rgb_jpeg_named_in_the_readme(name):
    data = sample_jpeg(name)
    assert data == (FOLDER / f"{name}.jpg").read_bytes()
    with Image.open(io.BytesIO(data)) as img:
        assert (img.format, img.mode) == ("JPEG", "RGB")
        size = img.size
    assert sample_image(name).size == size
    readme = (FOLDER / "README.md").read_text()
    assert f"| `{name}.jpg` | {size[0]} x {size[1]} |" in readme


def test_the_photos_are_small():
    assert sum((FOLDER / f"{n}.jpg").stat().st_size for n in SAMPLE_PHOTOS) < 600_000


def test_an_unknown_name_is_refused():
    with pytest.raises(ValueError, match="unknown sample photo"):
        sample_jpeg("../README.md")


def test_the_docker_image_copies_them():
    assert "COPY --chown=1000:1000 . ." in (ROOT / "Dockerfile").read_text()
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for path in FOLDER.iterdir():
        rel = path.relative_to(ROOT).as_posix()
        parents = [rel.rsplit("/", i)[0] for i in range(rel.count("/") + 1)]
        assert not [p for p in ignored for part in parents if fnmatch.fnmatch(part, p.lstrip("/"))], rel
