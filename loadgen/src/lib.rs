//! ringstore-load: the load generator (open and closed loop, YCSB workloads, key-design
//! scenarios, key-size sweeps). Until it lands, the storage benchmark
//! (`cargo bench -p ringstore-storage --bench store`) is the project's main job.
