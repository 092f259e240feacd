# Celery is imported when Django starts so that `delay_on_commit` uses our app.
from statuspage.celery import app as celery_app

__all__ = ("celery_app",)
