# The host collector (normally a systemd unit or a DaemonSet on every GPU host; it needs the
# host's /sys and the NVIDIA driver's libnvidia-ml). Build from the repository root:
#   docker build -f docker/collector.Dockerfile -t topo-collector .
# It installs only ./collectors: none of the service's dependencies.
FROM python:3.11-slim AS build
WORKDIR /src
COPY collectors/ collectors/
RUN pip wheel --no-cache-dir --wheel-dir /wheels ./collectors

FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends libudev1 && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10002 --home /var/spool/topo-collector --create-home collector
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER collector
ENTRYPOINT ["topo-collector"]
CMD ["run", "--server", "http://graphsvc:8000", "--spool-dir", "/var/spool/topo-collector"]
