"""The repair planner's rules, one module per rule family, each restating the Kafka source its
docstring names (docs/repair-rules.md lists them in the order a broker applies them at startup);
:mod:`logdoctor.repair.planner` orders them and assembles the plan."""
