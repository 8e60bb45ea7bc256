package dev.varve.benchmarks;

import dev.varve.config.WalSyncMode;
import org.apache.ignite.Ignite;
import org.apache.ignite.IgniteCheckedException;
import org.apache.ignite.IgniteCache;
import org.apache.ignite.Ignition;
import org.apache.ignite.cache.CacheAtomicityMode;
import org.apache.ignite.cache.CacheMode;
import org.apache.ignite.cache.CacheWriteSynchronizationMode;
import org.apache.ignite.cache.affinity.rendezvous.RendezvousAffinityFunction;
import org.apache.ignite.cluster.ClusterState;
import org.apache.ignite.configuration.CacheConfiguration;
import org.apache.ignite.configuration.DataRegionConfiguration;
import org.apache.ignite.configuration.DataStorageConfiguration;
import org.apache.ignite.configuration.DiskPageCompression;
import org.apache.ignite.configuration.IgniteConfiguration;
import org.apache.ignite.configuration.WALMode;
import org.apache.ignite.internal.IgniteEx;
import org.apache.ignite.internal.processors.metric.GridMetricManager;
import org.apache.ignite.spi.discovery.tcp.TcpDiscoverySpi;
import org.apache.ignite.spi.discovery.tcp.ipfinder.vm.TcpDiscoveryVmIpFinder;
import org.apache.ignite.spi.metric.LongMetric;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Apache Ignite 2.18 native persistence: one embedded server node on loopback (static IP finder on a free port, no
 * multicast, no REST or thin-client port), one persistent data region, one ATOMIC cache without backups. Figures come
 * from Ignite's own metric registries ({@code io.datastorage}, {@code io.dataregion.default}).
 */
final class IgniteTarget implements PeerTarget {
    static final String CACHE = "load";
    static final String REGION = "default";

    private final Ignite ignite;
    private final IgniteCache<Long, byte[]> cache;
    private final DataStorageConfiguration ds;
    private final DataRegionConfiguration region;
    private final LongMetric walWritten;
    private final LongMetric throttledMillis;
    private final LongMetric usedCpBufferPages;
    private final LongMetric dirtyPages;
    private final LongMetric cpStart;
    private final LongMetric cpPages;
    private final LongMetric cpRecoveryBytes;
    private final LongMetric cpRecoveryMillis;
    private final LongMetric cpPagesWriteMillis;
    private final LongMetric cpFsyncMillis;
    private final LongMetric cpLockHoldMillis;
    private final LongMetric cpTotalMillis;
    private final int partitions;

    IgniteTarget(CompareSetup setup, CompareSettings s, Path dir) {
        boolean recoveryData = setup == CompareSetup.IGNITE_RECOVERY_DATA;
        region = new DataRegionConfiguration()
                .setName(REGION)
                .setPersistenceEnabled(true)
                .setInitialSize(s.regionBytes())
                .setMaxSize(s.regionBytes())
                .setCheckpointPageBufferSize(s.checkpointBufferBytes())
                .setLazyMemoryAllocation(false) // allocated at start, like Varve's region
                .setMetricsEnabled(true);
        String wal = dir.resolve("wal").toAbsolutePath().toString();
        ds = new DataStorageConfiguration()
                .setPageSize(s.pageSize())
                .setWalMode(s.sync() == WalSyncMode.FSYNC ? WALMode.FSYNC : s.sync() == WalSyncMode.BACKGROUND ? WALMode.BACKGROUND : WALMode.LOG_ONLY)
                .setCheckpointFrequency(s.checkpointMillis())
                .setCheckpointThreads(CompareSettings.CHECKPOINT_THREADS)
                .setWriteRecoveryDataOnCheckpoint(recoveryData)
                .setCheckpointRecoveryDataCompression(DiskPageCompression.DISABLED)
                .setWalSegmentSize(64 << 20)
                // the WAL archive path equal to the WAL path turns archiving (copying every segment) off: Varve has none
                .setWalPath(wal)
                .setWalArchivePath(wal)
                .setDefaultDataRegionConfiguration(region);
        enableStorageMetrics(ds);
        int port = freePort();
        TcpDiscoverySpi discovery = new TcpDiscoverySpi()
                .setLocalAddress("127.0.0.1")
                .setLocalPort(port)
                .setLocalPortRange(0)
                .setIpFinder(new TcpDiscoveryVmIpFinder().setAddresses(List.of("127.0.0.1:" + port)));
        IgniteConfiguration cfg = new IgniteConfiguration()
                .setIgniteInstanceName("varve-compare")
                .setConsistentId("varve-compare")
                .setWorkDirectory(dir.toAbsolutePath().toString())
                .setLocalHost("127.0.0.1")
                .setDiscoverySpi(discovery)
                .setClientConnectorConfiguration(null)
                .setConnectorConfiguration(null)
                .setMetricsLogFrequency(0)
                .setPeerClassLoadingEnabled(false)
                // a loaded 2-core machine must not make the node think it is stuck
                .setFailureDetectionTimeout(120_000)
                .setSystemWorkerBlockedTimeout(120_000)
                .setDataStorageConfiguration(ds);
        ignite = Ignition.start(cfg);
        ignite.cluster().state(ClusterState.ACTIVE);
        partitions = s.partitions();
        cache = ignite.getOrCreateCache(new CacheConfiguration<Long, byte[]>(CACHE)
                .setCacheMode(CacheMode.PARTITIONED)
                .setAtomicityMode(CacheAtomicityMode.ATOMIC)
                .setBackups(0)
                .setWriteSynchronizationMode(CacheWriteSynchronizationMode.FULL_SYNC)
                .setAffinity(new RendezvousAffinityFunction(false, partitions)));
        GridMetricManager metrics = ((IgniteEx) ignite).context().metric();
        String st = "io.datastorage.";
        String rg = "io.dataregion." + REGION + ".";
        walWritten = metric(metrics, st + "WalWrittenBytes");
        throttledMillis = metric(metrics, rg + "TotalThrottlingTime");
        usedCpBufferPages = metric(metrics, st + "UsedCheckpointBufferPages");
        dirtyPages = metric(metrics, rg + "DirtyPages");
        cpStart = metric(metrics, st + "LastCheckpointStart");
        cpPages = metric(metrics, st + "LastCheckpointTotalPagesNumber");
        cpRecoveryBytes = metric(metrics, st + "LastCheckpointRecoveryDataSize");
        cpRecoveryMillis = metric(metrics, st + "LastCheckpointRecoveryDataWriteDuration");
        cpPagesWriteMillis = metric(metrics, st + "LastCheckpointPagesWriteDuration");
        cpFsyncMillis = metric(metrics, st + "LastCheckpointFsyncDuration");
        cpLockHoldMillis = metric(metrics, st + "LastCheckpointLockHoldDuration");
        cpTotalMillis = metric(metrics, st + "LastCheckpointDuration");
    }

    private static LongMetric metric(GridMetricManager m, String name) {
        return m.find(name, LongMetric.class); // null when this version lacks it
    }

    private static long value(LongMetric m) {
        return m == null ? -1 : m.value();
    }

    private static long nanos(LongMetric millis) {
        return millis == null ? -1 : millis.value() * 1_000_000L;
    }

    private static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void put(long id, byte[] value) {
        cache.put(id, value);
    }

    @Override
    public byte[] get(long id) {
        return cache.get(id);
    }

    @Override
    public void putBatch(long[] ids, byte[][] values, int n) {
        Map<Long, byte[]> m = new TreeMap<>();
        for (int i = 0; i < n; i++) m.put(ids[i], values[i]);
        cache.putAll(m);
    }

    /** Checkpoints the preloaded pages and waits, as Varve's settle does: else that checkpoint runs beside the timed gets. */
    @Override
    public void settle() {
        try {
            ((IgniteEx) ignite).context().cache().context().database().waitForCheckpoint("settle before gets");
        } catch (IgniteCheckedException e) {
            throw new IllegalStateException("Ignite checkpoint failed: " + e.getMessage(), e);
        }
    }

    @Override
    public Gauges gauges() {
        long t = value(throttledMillis);
        return new Gauges(value(walWritten), t < 0 ? -1 : t * 1_000_000L, value(usedCpBufferPages), value(dirtyPages));
    }

    @Override
    public Checkpoint lastCheckpoint() {
        long start = value(cpStart);
        if (start <= 0) return null;
        return new Checkpoint(start, value(cpPages), value(cpRecoveryBytes), nanos(cpRecoveryMillis), nanos(cpPagesWriteMillis),
                nanos(cpFsyncMillis), nanos(cpLockHoldMillis), nanos(cpTotalMillis));
    }

    @Override
    public String describe() {
        return String.format("Apache Ignite %s native persistence, one server node on 127.0.0.1: walMode=%s, writeRecoveryDataOnCheckpoint=%s "
                        + "(compression %s), pageSize=%d, data region %d MiB (persistent, initial = max, allocated at start), checkpointPageBufferSize=%d MiB, "
                        + "checkpointFrequency=%d ms, checkpointThreads=%d, walSegmentSize=%d MiB, WAL archiving off (archive path = WAL path), "
                        + "metrics enabled; cache: PARTITIONED, ATOMIC, 0 backups, FULL_SYNC, %d partitions; key Long, value byte[]; "
                        + "a batch is one putAll (not atomic across keys in an ATOMIC cache)",
                ignite.version(), ds.getWalMode(), ds.isWriteRecoveryDataOnCheckpoint(), ds.getCheckpointRecoveryDataCompression(),
                ds.getPageSize(), region.getMaxSize() >> 20, region.getCheckpointPageBufferSize() >> 20, ds.getCheckpointFrequency(),
                ds.getCheckpointThreads(), ds.getWalSegmentSize() >> 20, partitions);
    }

    @Override
    public void close() {
        Ignition.stop(ignite.name(), false); // a graceful stop: finishes with a checkpoint, like Varve's close
    }

    /**
     * The data-storage metrics read below (WAL bytes, checkpoint figures) are collected with this switch on; it is
     * deprecated in Ignite 2 but still the switch those figures were taken with, so the comparison stays the same.
     */
    @SuppressWarnings("deprecation")
    private static void enableStorageMetrics(DataStorageConfiguration ds) {
        ds.setMetricsEnabled(true);
    }
}
