-- Each book loads its clusters at start (market/book-loader.ts) by GPU type
-- and zone; without this index every book read the whole clusters table.
-- Clusters are written only by the admin API, so the index costs nothing on
-- the order path. The other start-up reads already had theirs (orders_open,
-- fills_book, leases_live, lease_nodes' primary key, nodes' unique key).
CREATE INDEX clusters_book ON clusters (gpu_type, zone);
