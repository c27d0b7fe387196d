"""``ai-sidebar-service``: build the settings from the environment and run the aiohttp app."""

import logging
import sys

from aiohttp import web

from .app import create_app
from .settings import Settings, SettingsError


def main() -> None:
    """Entry point of the ``ai-sidebar-service`` console script."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    try:
        settings = Settings.from_env()
        settings.check_bind()
    except SettingsError as err:
        print(f"ai-sidebar-service: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    web.run_app(create_app(settings), host=settings.host, port=settings.port,
                print=lambda text: logging.getLogger("service").info(text.strip()))


if __name__ == "__main__":
    main()
