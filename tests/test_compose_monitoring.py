"""`docker compose --profile monitoring up`: Prometheus and Grafana beside the service, validated offline with
the real Compose v2 parser (tests/test_compose.py's binary), and their configuration files (docs/monitoring/)
checked against what the service really exposes: the scrape target is the compose service and port, the
dashboard's data source is the provisioned one, and every metric a panel queries is one the service's
registry has (service/observability/metrics.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from service.observability.metrics import ServiceMetrics
from tests.test_compose import ROOT, _compose, _config

MONITORING = ROOT / "docs" / "monitoring"
DASHBOARD = MONITORING / "grafana" / "dashboards" / "vramwise.json"


def test_monitoring_profile_is_valid_and_opt_in() -> None:
    proc = _compose("--profile", "monitoring", "config", "-q")
    assert proc.returncode == 0, proc.stderr
    assert set(_config()["services"]) == {"vramwise", "postgres"}
    cfg = _config("monitoring")
    assert set(cfg["services"]) == {"vramwise", "postgres", "prometheus", "grafana"}
    for name in ("prometheus", "grafana"):
        assert cfg["services"][name]["profiles"] == ["monitoring"]


def _bind_sources(service: dict) -> dict[str, Path]:
    return {v["target"]: Path(v["source"]) for v in service["volumes"] if v["type"] == "bind"}


def test_mounted_files_exist_inside_the_repository() -> None:
    cfg = _config("monitoring")
    for name in ("prometheus", "grafana"):
        for target, source in _bind_sources(cfg["services"][name]).items():
            assert source.exists(), f"{name}: {source} (mounted at {target}) is missing"
            assert source.resolve().is_relative_to(ROOT)


def test_prometheus_scrapes_the_service_with_its_token() -> None:
    cfg = _config("monitoring", env={"VRAMWISE_METRICS_TOKEN": "t0ken"})
    prometheus = cfg["services"]["prometheus"]
    config_file = _bind_sources(prometheus)["/etc/prometheus/prometheus.yml"]
    assert f"--config.file={'/etc/prometheus/prometheus.yml'}" in prometheus["command"]
    scrape = yaml.safe_load(config_file.read_text(encoding="utf-8"))["scrape_configs"]
    job = next(j for j in scrape if j["job_name"] == "vramwise")
    assert job["metrics_path"] == "/metrics"
    host, port = job["static_configs"][0]["targets"][0].split(":")
    service = cfg["services"][host]  # the target is a compose service ...
    serve_port = service["command"][service["command"].index("--port") + 1]
    assert port == serve_port  # ... on the port `vramwise serve` listens on
    # the token the service checks reaches Prometheus as a secret file, read as the bearer credentials
    assert service["environment"]["VRAMWISE_METRICS_TOKEN"] == "t0ken"
    secret = next(s for s in prometheus["secrets"] if s["source"] == "vramwise_metrics_token")
    assert job["authorization"]["credentials_file"] == secret["target"]
    assert cfg["secrets"]["vramwise_metrics_token"]["environment"] == "VRAMWISE_METRICS_TOKEN"


def _exposed_metric_names() -> set[str]:
    """Every series name the registry can expose (a labelled family has no samples until it counts: its
    series names come from its type)."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
    names: set[str] = set()
    for family in ServiceMetrics().registry.collect():
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ()))
    return names


def test_dashboard_queries_metrics_the_service_exposes() -> None:
    cfg = _config("monitoring")
    grafana = _bind_sources(cfg["services"]["grafana"])
    provisioning = grafana["/etc/grafana/provisioning"]
    datasource = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text(encoding="utf-8"))
    source = datasource["datasources"][0]
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090"
    provider = yaml.safe_load((provisioning / "dashboards" / "vramwise.yml").read_text(encoding="utf-8"))
    dashboards_dir = Path(provider["providers"][0]["options"]["path"])
    assert grafana[str(dashboards_dir)] == DASHBOARD.parent

    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exposed = _exposed_metric_names()
    titles = [p["title"] for p in dashboard["panels"]]
    for wanted in ("Answers by channel", "First-event latency", "LLM fallbacks", "Errors"):
        assert any(t.startswith(wanted) for t in titles), wanted
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == source["uid"]
        for target in panel["targets"]:
            queried = set(re.findall(r"\bvramwise_[a-z_]+", target["expr"]))
            assert queried, panel["title"]
            assert queried <= exposed, f"{panel['title']}: {sorted(queried - exposed)} not exposed"
