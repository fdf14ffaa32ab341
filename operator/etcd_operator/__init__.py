"""The etcd operator: runs etcd clusters described by EtcdCluster resources (kopf)."""
