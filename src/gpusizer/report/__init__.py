"""Report: the one-page sizing sheet (R15) as JSON (``json_report``, the contract), Markdown
(``markdown``), HTML (``html``) and a rich terminal table (``terminal``). Every printed column
names its unit and scope; every figure comes from the JSON document."""
