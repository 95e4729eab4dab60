"""kafka-logdoctor: read, check, repair and extract Apache Kafka broker log directories offline."""

__version__ = "0.1.0"
