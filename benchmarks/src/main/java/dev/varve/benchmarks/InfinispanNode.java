package dev.varve.benchmarks;

import org.HdrHistogram.Histogram;
import org.infinispan.AdvancedCache;
import org.infinispan.Cache;
import org.infinispan.configuration.cache.CacheMode;
import org.infinispan.configuration.cache.ConfigurationBuilder;
import org.infinispan.configuration.global.GlobalConfigurationBuilder;
import org.infinispan.distribution.DistributionManager;
import org.infinispan.distribution.LocalizedCacheTopology;
import org.infinispan.manager.DefaultCacheManager;
import org.infinispan.topology.CacheTopology;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Base64;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * One node of the three-node Infinispan comparison, in its own JVM (started by {@link InfinispanCluster}): a clustered
 * cache manager over JGroups TCP on 127.0.0.1 (static discovery, {@code infinispan-loopback-jgroups.xml}) with the
 * distributed synchronous cache of {@link InfinispanComparison} (2 owners, 256 segments, write-through to the store
 * named on the command line, in {@code DIR/store}). Global state is kept in {@code DIR}, so a cluster that was
 * shut down with {@code shutdown} comes back with its previous topology: every node owns again what its store holds.
 *
 * <p>Arguments: {@code STORE NAME DIR}; {@code varve.bench.port} and {@code varve.bench.hosts} name the JGroups
 * ports. It prints {@code @@ started MILLIS} (cache manager creation to a running, joined cache), then reads one
 * command per line from stdin and answers one {@code @@} line on stdout: {@code put FROM TO WRITERS} (that many
 * threads put an equal share of the keys each; answers the elapsed nanoseconds and the base64 put-latency
 * histogram), {@code get COUNT SEED ENTRIES} (random gets; answers the elapsed nanoseconds, the gets of keys this node
 * owns and their nanoseconds; fails on a missing key), {@code topology} (members and whether the topology is stable),
 * {@code probe} (one get), {@code shutdown} (Infinispan's cluster-wide cache shutdown, which persists the topology),
 * {@code exit}.
 */
final class InfinispanNode {
    private final DefaultCacheManager manager;
    private final AdvancedCache<String, byte[]> cache;

    private InfinispanNode(InfinispanComparison.Store store, String name, Path dir) {
        GlobalConfigurationBuilder global = GlobalConfigurationBuilder.defaultClusteredBuilder();
        global.transport().clusterName("varve-bench-" + store).nodeName(name).addProperty("configurationFile", "infinispan-loopback-jgroups.xml");
        // the node directory itself: Infinispan requires every store location to lie below the global persistent location
        global.globalState().enable().persistentLocation(dir.toString());
        ConfigurationBuilder cb = new ConfigurationBuilder();
        cb.clustering().cacheMode(CacheMode.DIST_SYNC).hash().numOwners(2).numSegments(InfinispanComparison.SEGMENTS);
        cb.clustering().stateTransfer().timeout(10, TimeUnit.MINUTES);
        cb.clustering().remoteTimeout(2, TimeUnit.MINUTES); // a loaded 2-core machine: a slow store write is not a failure
        InfinispanComparison.configureStore(store, cb, dir.resolve("store"));
        manager = new DefaultCacheManager(global.build(), false);
        manager.defineConfiguration(InfinispanComparison.CACHE, cb.build());
        manager.start();
        Cache<String, byte[]> c = manager.getCache(InfinispanComparison.CACHE);
        cache = c.getAdvancedCache();
    }

    public static void main(String[] args) throws Exception {
        PrintStream answers = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err); // the real stdout carries answers only
        long t0 = System.nanoTime();
        // absolute: a relative store location is resolved under the persistent location, which is this directory itself
        InfinispanNode node = new InfinispanNode(InfinispanComparison.Store.valueOf(args[0]), args[1], Path.of(args[2]).toAbsolutePath());
        answers.println("@@ started " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] a = line.trim().split(" ");
            try {
                if (a[0].equals("exit")) {
                    node.manager.stop();
                    answers.println("@@ bye");
                    return;
                }
                answers.println("@@ " + node.run(a));
            } catch (Exception e) {
                e.printStackTrace();
                answers.println("@@ERR " + e);
            }
        }
    }

    private String run(String[] a) throws InterruptedException {
        switch (a[0]) {
            case "put":
                return put(Long.parseLong(a[1]), Long.parseLong(a[2]), Integer.parseInt(a[3]));
            case "get":
                return get(Integer.parseInt(a[1]), Long.parseLong(a[2]), Long.parseLong(a[3]));
            case "topology": {
                DistributionManager dm = cache.getDistributionManager();
                CacheTopology t = dm.getCacheTopology();
                boolean stable = t.getPhase() == CacheTopology.Phase.NO_REBALANCE && t.getPendingCH() == null && dm.isJoinComplete();
                return t.getMembers().size() + " " + stable;
            }
            case "probe": // a read that needs the whole cluster: fails while a restored topology still waits for a member
                cache.get(InfinispanComparison.key(0));
                return "ok";
            case "shutdown":
                cache.shutdown();
                return "down";
            default:
                throw new IllegalArgumentException("unknown command " + a[0]);
        }
    }

    /** Puts keys {@code from..to} from {@code writers} threads ({@link InfinispanComparison#putKeys}). */
    private String put(long from, long to, int writers) throws InterruptedException {
        long t0 = System.nanoTime();
        Histogram latency = InfinispanComparison.putKeys(cache, from, to, writers);
        long elapsed = System.nanoTime() - t0;
        ByteBuffer buf = ByteBuffer.allocate(latency.getNeededByteBufferCapacity());
        int n = latency.encodeIntoCompressedByteBuffer(buf);
        return elapsed + " " + Base64.getEncoder().encodeToString(Arrays.copyOf(buf.array(), n));
    }

    /**
     * {@code count} gets of random keys among the first {@code entries}; every one must be found. Answers the elapsed
     * nanoseconds, then how many keys this node owned a copy of (read from its own store) and the nanoseconds those
     * took, so the report can tell the store's part of a cold get from the cluster's round trip.
     */
    private String get(int count, long seed, long entries) {
        SplittableRandom rnd = new SplittableRandom(seed);
        LocalizedCacheTopology topology = cache.getDistributionManager().getCacheTopology();
        long local = 0;
        long localNanos = 0;
        long t0 = System.nanoTime();
        for (int i = 0; i < count; i++) {
            String key = InfinispanComparison.key(rnd.nextLong(entries));
            long s = System.nanoTime();
            if (cache.get(key) == null) throw new IllegalStateException("lost " + key);
            if (topology.isReadOwner(key)) {
                local++;
                localNanos += System.nanoTime() - s;
            }
        }
        return (System.nanoTime() - t0) + " " + local + " " + localNanos;
    }

    /** Decodes a histogram that {@code put} answered. */
    static Histogram histogram(String base64) {
        try {
            return Histogram.decodeFromCompressedByteBuffer(ByteBuffer.wrap(Base64.getDecoder().decode(base64)), 0);
        } catch (java.util.zip.DataFormatException e) {
            throw new IllegalStateException("a node answered a damaged latency histogram", e);
        }
    }
}
