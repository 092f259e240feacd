import os
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
import pytest
from django.core.management import call_command
from incidents.models import Incident
SHOTS = os.environ.get("SHOTS", "")

@pytest.mark.django_db(transaction=True)
def test_shots(live_server):
    from playwright.sync_api import sync_playwright
    call_command("load_demo", stdout=open(os.devnull, "w"))
    gcs = Incident.objects.get(title__startswith="Cloud Storage elevated")
    paths = {"incident": f"/incidents/{gcs.public_id}/", "index": "/", "product": "/products/cloud-storage/", "history": "/history/?month=2009-09"}
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless","--no-sandbox","--disable-gpu"])
        for spec in SHOTS.split(","):
            name, w, h, y = spec.split(":")
            pg = b.new_page(viewport={"width": int(w), "height": int(h)})
            pg.goto(live_server.url + paths[name])
            pg.evaluate(f"window.scrollTo(0,{y})")
            pg.screenshot(path=f"/tmp/shot-{name}-{w}-{y}.png")
            pg.close()
        b.close()
