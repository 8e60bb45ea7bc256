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
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The {@code --infinispan} job: the same Infinispan cache, workload and durability with three persistent stores side
 * by side: Infinispan's {@code SoftIndexFileStore} (its default file store), {@code RocksDBStore}
 * ({@code infinispan-cachestore-rocksdb}) and Varve's {@code VarveStore}. Durability is "survives a process crash"
 * for all three: SIFS without {@code syncWrites}, RocksDB with its WAL unsynced, Varve {@code LOG_ONLY}.
 *
 * <p>Per store, on one node (a local cache, 256 segments): write-through {@code put} throughput and p99 latency
 * from one thread ({@code --keys} entries, 100-byte values), bytes on disk after a clean stop, the restart time
 * (cache manager start to the first loaded entry) and cold {@code get} throughput after it (no preload, so every
 * read goes to the store). The three-node variant is not part of the job.
 */
final class InfinispanComparison {
    private static final String CACHE = "bench";
    private static final int SEGMENTS = 256;
    private static final int VALUE_BYTES = 100;
    private static final int COLD_GETS = 100_000;

    /** The stores compared. */
    enum Store { SIFS, ROCKSDB, VARVE }

    /** One measured row. */
    record Row(Store store, double putsPerSecond, double putP99Micros, long bytesOnDisk, double restartMillis, double coldGetsPerSecond) {
    }

    private final long entries;
    private final Path work;
    private final Path report;
    private final PrintStream out;

    InfinispanComparison(Options opts, PrintStream out) {
        this.entries = opts.keys;
        this.work = opts.out.resolve("infinispan-work");
        this.report = opts.out.resolve("INFINISPAN.md");
        this.out = out;
    }

    void run() throws Exception {
        List<Row> rows = new ArrayList<>();
        for (Store s : Store.values()) {
            out.printf(Locale.ROOT, "%s, %,d entries...%n", s, entries);
            Row r = measure(s);
            rows.add(r);
            out.println(line(r));
        }
        String table = table(rows);
        out.print(table);
        Files.createDirectories(report.getParent());
        Files.writeString(report, "# Infinispan persistent stores side by side\n\n" + MachineInfo.probe(work.getParent()).oneLine() + "\n\n"
                + "`java -jar varve-benchmarks.jar --infinispan --keys " + entries + "`: one writer thread, " + VALUE_BYTES
                + "-byte values, write-through, one node, a local cache with 256 segments; cold gets after the restart (no preload:"
                + " every get reads the store).\n\n" + table);
        wipe(work);
    }

    private Row measure(Store store) throws Exception {
        Path base = work.resolve(store.name().toLowerCase(Locale.ROOT));
        wipe(base);
        DefaultCacheManager manager = start(store, base);
        Histogram latency = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
        byte[] filler = new byte[VALUE_BYTES];
        long t0 = System.nanoTime();
        try {
            Cache<String, byte[]> c = manager.getCache(CACHE);
            for (long i = 0; i < entries; i++) {
                byte[] v = filler.clone();
                v[0] = (byte) i;
                long s = System.nanoTime();
                c.put(key(i), v);
                latency.recordValue(Math.min(System.nanoTime() - s, latency.getHighestTrackableValue()));
            }
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
            return new Row(store, putsPerSecond, latency.getValueAtPercentile(99) / 1e3, bytes, restartMillis, coldGets);
        } finally {
            again.stop();
        }
    }

    private static String key(long i) {
        return "key-" + i;
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

    private static void configureStore(Store store, ConfigurationBuilder cb, Path dir) {
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

    private static String table(List<Row> rows) {
        StringBuilder sb = new StringBuilder("| store | puts/s | put p99 µs | MiB on disk | restart ms | cold gets/s |\n"
                + "| --- | --: | --: | --: | --: | --: |\n");
        for (Row r : rows) sb.append(line(r)).append('\n');
        return sb.toString();
    }
}
