# How2Everything Studio: one image for web (gunicorn), worker (celery) and the migrate step.
# Build the local-model image with: docker build --build-arg EXTRAS=local-llm .
FROM python:3.11-slim-bookworm

ARG EXTRAS=""
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    H2E_VAR_DIR=/app/var \
    STATIC_ROOT=/app/staticfiles \
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
# CMAKE_ARGS: llama-cpp-python builds for plain AVX2, not the build machine's CPU (see the Makefile).

# build-essential/cmake only matter for the local-llm extra (llama-cpp-python compiles).
RUN if [ -n "$EXTRAS" ]; then \
        apt-get update && apt-get install -y --no-install-recommends build-essential cmake \
        && rm -rf /var/lib/apt/lists/*; \
    fi

WORKDIR /app
COPY pyproject.toml README.md ./
COPY h2e_site ./h2e_site
COPY mining ./mining
COPY judging ./judging
COPY goal_step ./goal_step
COPY annotation ./annotation
RUN pip install -e ".${EXTRAS:+[$EXTRAS]}"  # editable: the code runs from /app

COPY . .
# The bytecode of our modules, compiled once here: PYTHONDONTWRITEBYTECODE keeps every process from writing
# it, so without this each would compile them from source at its start.
RUN python -m compileall -q h2e_site mining judging goal_step annotation demo \
    && DEBUG=0 SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput \
    && useradd --system --uid 1000 --home-dir /app h2e \
    && mkdir -p /app/var && chown -R h2e /app/var

USER h2e
EXPOSE 8000
CMD ["gunicorn", "h2e_site.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
