"""The replica deployment (deploy/compose.yaml and deploy/nginx.conf, issue 23), checked without Docker: the
services it must start, the environment each replica gets (read by the service's own settings), and the balancer
in front of exactly those replicas."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import yaml

from service.settings import ENV_FIELDS, Settings
from tests.support.nodered import REPO

DEPLOY = REPO / "deploy"


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))  # merge keys (<<) resolved


def interpolated(value: str, env: dict[str, str]) -> str:
    """``value`` with Compose's ``${NAME}``, ``${NAME:-default}`` and ``${NAME:?message}`` replaced from ``env``."""
    def one(match: re.Match) -> str:
        name, op, rest = match.group(1), match.group(2), match.group(3)
        if name in env and env[name]:
            return env[name]
        assert op != ":?", f"{name} is required: {rest}"
        return rest if op == ":-" else ""
    return re.sub(r"\$\{(\w+)(?:(:[-?])([^}]*))?\}", one, value)


def replicas(services: dict) -> dict[str, dict]:
    return {name: spec for name, spec in services.items() if name.startswith("service-")}


def test_compose_starts_postgres_two_replicas_and_a_balancer():
    services = compose()["services"]
    assert set(services) == {"postgres", "service-1", "service-2", "balancer"}
    postgres = services["postgres"]
    assert postgres["image"].startswith("postgres:") and "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    assert any(v.endswith(":/var/lib/postgresql/data") for v in postgres["volumes"])
    for spec in replicas(services).values():
        assert spec["build"] == {"context": "..", "dockerfile": "service/Dockerfile"}
        assert (REPO / "service" / "Dockerfile").exists()
        assert spec["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    # each replica its own knowledge volume
    mounts = [spec["volumes"][0] for spec in replicas(services).values()]
    assert len(set(mounts)) == 2 and all(m.endswith(":/data") for m in mounts)


def test_every_replica_reads_the_same_database_and_token_and_would_start():
    services = compose()["services"]
    db = services["postgres"]["environment"]
    env = {"POSTGRES_PASSWORD": "pw-for-the-test", "AI_SIDEBAR_TOKEN": "token-for-the-test-0123456789"}
    settings = []
    for spec in replicas(services).values():
        variables = {name: interpolated(str(value), env) for name, value in spec["environment"].items()}
        assert set(variables) <= set(ENV_FIELDS)  # names the service knows
        url = urlsplit(variables["DATABASE_URL"])
        assert (url.scheme, url.hostname, url.port, url.path) == ("postgresql", "postgres", 5432,
                                                                   f"/{db['POSTGRES_DB']}")
        assert (url.username, url.password) == (db["POSTGRES_USER"], env["POSTGRES_PASSWORD"])
        loaded = Settings.from_env(variables)
        loaded.check_bind()  # 0.0.0.0 with a token: allowed
        settings.append(loaded)
    assert len({s.memory_target() for s in settings}) == 1
    assert {s.token.get_secret_value() for s in settings} == {env["AI_SIDEBAR_TOKEN"]}
    assert {s.port for s in settings} == {8765}
    try:
        interpolated(services["service-1"]["environment"]["AI_SIDEBAR_TOKEN"], {})
    except AssertionError as refused:
        assert "AI_SIDEBAR_TOKEN" in str(refused)  # compose refuses to start without one
    else:
        raise AssertionError("the token must be required")


def test_the_balancer_spreads_over_exactly_the_replicas_and_streams_unbuffered():
    services = compose()["services"]
    balancer = services["balancer"]
    assert balancer["image"].startswith("nginx:")
    assert "./nginx.conf:/etc/nginx/conf.d/default.conf:ro" in balancer["volumes"]
    assert balancer["ports"] == ["127.0.0.1:8765:8765"]
    conf = (DEPLOY / "nginx.conf").read_text(encoding="utf-8")
    upstream = re.search(r"upstream ai_sidebar \{(.*?)\}", conf, re.S).group(1)
    assert re.findall(r"server ([\w-]+):8765", upstream) == sorted(replicas(services))
    assert set(balancer["depends_on"]) == set(replicas(services))
    for directive in ("listen 8765;", "proxy_pass http://ai_sidebar;", "proxy_buffering off;",
                      "proxy_http_version 1.1;", "proxy_read_timeout 1h;"):
        assert directive in conf
    assert "non_idempotent" not in conf  # a POST already sent is never retried on the other replica
