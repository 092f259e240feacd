#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "statuspage.settings")
    # manage.py is the developer's entry point, so it defaults to development mode.
    # Production processes (gunicorn, celery) load statuspage.settings directly, where
    # DEBUG is off unless set; docker/.env.example sets DEBUG=0 for commands run there.
    os.environ.setdefault("DEBUG", "1")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
