# The graph service. Build from the repository root:
#   docker build -f docker/service.Dockerfile -t graphsvc .
# Multi-stage: wheels are built in the first stage; the runtime image has no compilers and
# runs as an unprivileged user. It installs the same two packages the tests install
# (./collectors for the shared fact model, then .), from their pyproject pins.
FROM python:3.11-slim AS build
WORKDIR /src
COPY collectors/ collectors/
COPY pyproject.toml README.md ./
COPY graphsvc/ graphsvc/
COPY schema/ schema/
COPY queries/ queries/
RUN pip wheel --no-cache-dir --wheel-dir /wheels ./collectors . 

FROM python:3.11-slim
RUN useradd --system --uid 10001 --home /var/lib/graphsvc --create-home graphsvc
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER graphsvc
WORKDIR /var/lib/graphsvc
ENV GRAPHSVC_HOST=0.0.0.0 GRAPHSVC_PORT=8000 GRAPHSVC_DATA_DIR=/var/lib/graphsvc/data
EXPOSE 8000
HEALTHCHECK CMD python -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=3)" || exit 1
ENTRYPOINT ["graphsvc"]
CMD ["serve"]
