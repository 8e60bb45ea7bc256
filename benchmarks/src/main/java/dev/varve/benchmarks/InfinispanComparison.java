package dev.varve.benchmarks;

import dev.varve.config.WalSyncMode;
import dev.varve.infinispan.VarveStoreConfigurationBuilder;
import org.HdrHistogram.Histogram;
import org.infinispan.Cache;
import org.infinispan.configuration.cache.CacheMode;
import org.infinispan.configuration.cache.ConfigurationBuilder;
import org.infinispan.configuration.global.GlobalConfigurationBuilder;
import org.infinispan.manager.DefaultCacheManager;
import org.infinispan.persistence.rocksdb.configuration.RocksDBStoreConfigurationBuilder;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The {@code --infinispan} job: the same Infinispan cache, workload and durability with three persistent stores side
 * by side: Infinispan's {@code SoftIndexFileStore} (its default file store), {@code RocksDBStore}
 * ({@code infinispan-cachestore-rocksdb}) and Varve's {@code VarveStore}. Durability is "survives a process crash"
 * for all three: SIFS without {@code syncWrites}, RocksDB with its WAL unsynced, Varve {@code LOG_ONLY}.
 *
 * <p>Per store, on one node (a local cache, 256 segments): write-through {@code put} throughput and p99 latency
 * from {@code --threads} writer threads ({@code --keys} entries, 100-byte values), bytes on disk after a clean stop,
 * the restart time (cache manager start to the first loaded entry) and cold {@code get} throughput after it (no
 * preload, so every read goes to the store).
 *
 * <p>Then the same on three nodes ({@link InfinispanCluster}: three child JVMs, JGroups TCP on 127.0.0.1, a
 * distributed synchronous cache, 2 owners, 256 segments): {@code --threads} writer threads per node, each node
 * putting a third of the keys; bytes summed over the three nodes' stores after a clean cluster-wide shutdown; the
 * restart time of the slowest node when all three start at once (its cache manager's creation to its cache running,
 * which waits for the cluster to restore its previous topology); cold gets from one thread per node, in parallel,
 * split by whether the reading node owns the key.
 */
final class InfinispanComparison {
    static final String CACHE = "bench";
    static final int SEGMENTS = 256;
    private static final int VALUE_BYTES = 100;
    private static final int COLD_GETS = 100_000;
    /** A phase of the three-node run on a loaded 2-core machine may take many minutes; a hung node must still fail the job. */
    private static final long CLUSTER_PHASE_SECONDS = 3 * 3600;

    /** The stores compared. */
    enum Store { SIFS, ROCKSDB, VARVE }

    /**
     * One measured row. On three nodes, {@code ownedGetMicros} is the mean cold get of a key the reading node holds a
     * copy of (its own store answers) and {@code remoteGetMicros} of one it does not (a round trip to an owner); NaN on
     * one node.
     */
    record Row(Store store, double putsPerSecond, double putP99Micros, long bytesOnDisk, double restartMillis, double coldGetsPerSecond,
               double ownedGetMicros, double remoteGetMicros) {
    }

    private final long entries;
    private final int writers;
    private final Path work;
    private final Path report;
    private final PrintStream out;

    InfinispanComparison(Options opts, PrintStream out) {
        this.entries = opts.keys;
        this.writers = opts.threads;
        this.work = opts.out.resolve("infinispan-work");
        this.report = opts.out.resolve("INFINISPAN.md");
        this.out = out;
    }

    void run() throws Exception {
        List<Row> single = new ArrayList<>();
        for (Store s : Store.values()) {
            out.printf(Locale.ROOT, "%s, one node, %,d entries...%n", s, entries);
            Row r = measure(s);
            single.add(r);
            out.println(line(r));
        }
        List<Row> cluster = new ArrayList<>();
        for (Store s : Store.values()) {
            out.printf(Locale.ROOT, "%s, three nodes, %,d entries...%n", s, entries);
            Row r = measureCluster(s);
            cluster.add(r);
            out.println(line(r));
        }
        String tables = "One node:\n\n" + table(single) + "\nThree nodes:\n\n" + table(cluster) + "\n" + getSplit(cluster);
        out.print(tables);
        Files.createDirectories(report.getParent());
        Files.writeString(report, "# Infinispan persistent stores side by side\n\n" + MachineInfo.probe(work.getParent()).oneLine() + "\n\n"
                + "`java -jar varve-benchmarks.jar --infinispan --keys " + entries + " --threads " + writers + "`: " + VALUE_BYTES
                + "-byte values, write-through; one node: a local cache with 256 segments, " + writers + " writer thread(s); three"
                + " nodes: three JVMs on loopback (JGroups TCP), a distributed synchronous cache, 2 owners, 256 segments, "
                + writers + " writer thread(s) per node, bytes summed over the"
                + " nodes, restart = the slowest node when all three start at once. Cold gets after the restart (no preload:"
                + " every get reads the store).\n\n" + tables);
        wipe(work);
    }

    /** The three-node row of {@code store}: puts, a clean cluster-wide shutdown, a restart of all three, cold gets. */
    private Row measureCluster(Store store) throws Exception {
        Path base = work.resolve("cluster-" + store.name().toLowerCase(Locale.ROOT));
        wipe(base);
        int[] ports = InfinispanCluster.freePorts();
        Histogram latency = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
        double putsPerSecond;
        try (InfinispanCluster c = InfinispanCluster.start(store, base, ports)) {
            c.awaitStable();
            String[] puts = new String[InfinispanCluster.NODES];
            for (int i = 0; i < puts.length; i++) puts[i] = "put " + entries * i / puts.length + " " + entries * (i + 1) / puts.length + " " + writers;
            long t0 = System.nanoTime();
            String[] answers = c.askAll(puts, CLUSTER_PHASE_SECONDS);
            putsPerSecond = entries / ((System.nanoTime() - t0) / 1e9);
            for (String a : answers) latency.add(InfinispanNode.histogram(a.split(" ")[1]));
            c.shutdown();
        }
        long bytes = 0;
        for (int i = 0; i < InfinispanCluster.NODES; i++) bytes += bytesUnder(InfinispanCluster.nodeDir(base, i).resolve("store"));
        try (InfinispanCluster c = InfinispanCluster.start(store, base, ports)) {
            double restartMillis = c.startMillis();
            c.awaitStable();
            int perNode = COLD_GETS / InfinispanCluster.NODES;
            String[] gets = new String[InfinispanCluster.NODES];
            for (int i = 0; i < gets.length; i++) gets[i] = "get " + perNode + " " + (42 + i) + " " + entries;
            long g0 = System.nanoTime();
            String[] got = c.askAll(gets, CLUSTER_PHASE_SECONDS);
            double coldGets = (double) perNode * gets.length / ((System.nanoTime() - g0) / 1e9);
            long owned = 0;
            long ownedNanos = 0;
            long allNanos = 0;
            for (String a : got) {
                String[] f = a.split(" ");
                allNanos += Long.parseLong(f[0]);
                owned += Long.parseLong(f[1]);
                ownedNanos += Long.parseLong(f[2]);
            }
            long remote = (long) perNode * gets.length - owned;
            c.shutdown();
            return new Row(store, putsPerSecond, latency.getValueAtPercentile(99) / 1e3, bytes, restartMillis, coldGets,
                    ownedNanos / 1e3 / Math.max(1, owned), (allNanos - ownedNanos) / 1e3 / Math.max(1, remote));
        }
    }

    private Row measure(Store store) throws Exception {
        Path base = work.resolve(store.name().toLowerCase(Locale.ROOT));
        wipe(base);
        DefaultCacheManager manager = start(store, base);
        Histogram latency;
        long t0 = System.nanoTime();
        try {
            latency = putKeys(manager.getCache(CACHE), 0, entries, writers);
        } finally {
            manager.stop();
        }
        double putsPerSecond = entries / ((System.nanoTime() - t0) / 1e9);
        long bytes = bytesUnder(base);
        long r0 = System.nanoTime();
        DefaultCacheManager again = start(store, base);
        try {
            Cache<String, byte[]> c = again.getCache(CACHE);
            if (c.get(key(0)) == null) throw new IllegalStateException(store + " lost " + key(0) + " across a clean restart");
            double restartMillis = (System.nanoTime() - r0) / 1e6;
            SplittableRandom rnd = new SplittableRandom(42);
            long g0 = System.nanoTime();
            for (int i = 0; i < COLD_GETS; i++) {
                long k = rnd.nextLong(entries);
                if (c.get(key(k)) == null) throw new IllegalStateException(store + " lost " + key(k) + " across a clean restart");
            }
            double coldGets = COLD_GETS / ((System.nanoTime() - g0) / 1e9);
            return new Row(store, putsPerSecond, latency.getValueAtPercentile(99) / 1e3, bytes, restartMillis, coldGets, Double.NaN, Double.NaN);
        } finally {
            again.stop();
        }
    }

    /**
     * Puts keys {@code from..to} into {@code cache} from {@code writers} threads, each its own contiguous share, and
     * answers every put's latency. A clustered put waits for a round trip to the other owner, so one thread alone
     * would measure that latency rather than what a node can write.
     */
    static Histogram putKeys(Cache<String, byte[]> cache, long from, long to, int writers) throws InterruptedException {
        Histogram all = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
        ExecutorService pool = Executors.newFixedThreadPool(writers);
        try {
            List<Future<Histogram>> shares = new ArrayList<>();
            for (int w = 0; w < writers; w++) {
                long lo = from + (to - from) * w / writers;
                long hi = from + (to - from) * (w + 1) / writers;
                shares.add(pool.submit(() -> {
                    Histogram latency = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
                    for (long i = lo; i < hi; i++) {
                        long s = System.nanoTime();
                        cache.put(key(i), value(i));
                        latency.recordValue(Math.min(System.nanoTime() - s, latency.getHighestTrackableValue()));
                    }
                    return latency;
                }));
            }
            for (Future<Histogram> s : shares) all.add(s.get());
            return all;
        } catch (ExecutionException e) {
            throw new IllegalStateException("a writer failed: " + e.getCause(), e.getCause());
        } finally {
            pool.shutdownNow();
        }
    }

    static String key(long i) {
        return "key-" + i;
    }

    static byte[] value(long i) {
        byte[] v = new byte[VALUE_BYTES];
        v[0] = (byte) i;
        return v;
    }

    private static DefaultCacheManager start(Store store, Path dir) throws IOException {
        Files.createDirectories(dir);
        ConfigurationBuilder cb = new ConfigurationBuilder();
        cb.clustering().cacheMode(CacheMode.LOCAL).hash().numSegments(SEGMENTS);
        configureStore(store, cb, dir);
        DefaultCacheManager m = new DefaultCacheManager(new GlobalConfigurationBuilder().nonClusteredDefault().build(), false);
        m.defineConfiguration(CACHE, cb.build());
        m.start();
        m.getCache(CACHE);
        return m;
    }

    static void configureStore(Store store, ConfigurationBuilder cb, Path dir) {
        switch (store) {
            case SIFS -> cb.persistence().addSoftIndexFileStore().dataLocation(dir.resolve("data").toString())
                    .indexLocation(dir.resolve("index").toString()).syncWrites(false);
            case ROCKSDB -> cb.persistence().addStore(RocksDBStoreConfigurationBuilder.class).location(dir.resolve("data").toString())
                    .expiredLocation(dir.resolve("expired").toString());
            case VARVE -> cb.persistence().addStore(VarveStoreConfigurationBuilder.class).location(dir.toString())
                    .walSyncMode(WalSyncMode.LOG_ONLY);
        }
    }

    private static long bytesUnder(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile).mapToLong(p -> {
                try {
                    return Files.size(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }).sum();
        }
    }

    /** Deletes a directory this job made (under --out/infinispan-work) and everything in it. */
    private static void wipe(Path dir) throws IOException {
        if (!Files.exists(dir)) return;
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
        }
    }

    private static String line(Row r) {
        return String.format(Locale.ROOT, "| %-7s | %,10.0f | %,8.0f | %,8.1f | %,8.0f | %,10.0f |", r.store(), r.putsPerSecond(),
                r.putP99Micros(), r.bytesOnDisk() / 1048576.0, r.restartMillis(), r.coldGetsPerSecond());
    }

    /** Where a three-node cold get's time goes: the reading node's own store, or a round trip to an owner. */
    private static String getSplit(List<Row> rows) {
        StringBuilder sb = new StringBuilder("Three-node cold gets by where the key was (mean µs per get, from the reading node):\n\n"
                + "| store | key owned by the reader (its store answers) | key elsewhere (round trip to an owner) |\n| --- | --: | --: |\n");
        for (Row r : rows) sb.append(String.format(Locale.ROOT, "| %-7s | %,8.0f | %,8.0f |%n", r.store(), r.ownedGetMicros(), r.remoteGetMicros()));
        return sb.toString();
    }

    private static String table(List<Row> rows) {
        StringBuilder sb = new StringBuilder("| store | puts/s | put p99 µs | MiB on disk | restart ms | cold gets/s |\n"
                + "| --- | --: | --: | --: | --: | --: |\n");
        for (Row r : rows) sb.append(line(r)).append('\n');
        return sb.toString();
    }
}
