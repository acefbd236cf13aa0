"""The GPU card table (package data) and offer catalogs (YAML, CSV, SkyPilot ``vms.csv``)."""
