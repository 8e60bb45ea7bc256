package dev.varve.infinispan;

import io.reactivex.rxjava3.core.Flowable;
import org.infinispan.AdvancedCache;
import org.infinispan.Cache;
import org.infinispan.commons.util.IntSets;
import org.infinispan.conflict.MergePolicy;
import org.infinispan.configuration.cache.CacheMode;
import org.infinispan.configuration.cache.ConfigurationBuilder;
import org.infinispan.configuration.global.GlobalConfigurationBuilder;
import org.infinispan.distribution.LocalizedCacheTopology;
import org.infinispan.factories.ComponentRegistry;
import org.infinispan.manager.DefaultCacheManager;
import org.infinispan.persistence.manager.PersistenceManager;
import org.infinispan.persistence.spi.NonBlockingStore;
import org.infinispan.topology.CacheTopology;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One grid node in its own JVM (started by {@link NodeProcess}): a clustered cache manager over JGroups TCP on
 * 127.0.0.1 with static discovery, and the distributed synchronous cache {@value #CACHE} (2 owners, {@value #SEGMENTS} segments)
 * persisted by a {@link VarveStore} in the node's directory (or, to compare, by Infinispan's own
 * {@code SoftIndexFileStore}: third argument {@code sifs}; the fourth is its {@link NodeProcess.Sizing}). Global state
 * persistence is on, in the directory's parent, so a cluster stopped with {@code shutdown} restores its topology when it
 * restarts. It reads one command per line from stdin and answers one line starting with {@code @@} on stdout (logs go
 * to stderr).
 *
 * <p>Commands: {@code put FROM TO TAG}, {@code check FROM TO TAG} (how many {@code k<i>} read {@code TAG-i}),
 * {@code putttl FROM TO MILLIS}, {@code stream FROM ACKFILE} (put {@code s<i>} one by one, recording each
 * acknowledged index), {@code checkstream FROM TO}, {@code topology}, {@code local} (what this node's store holds,
 * and how much of it this node does not own), {@code localentries FILE} (the entries this node's store holds, "key TAB value" a line), {@code purge}, {@code resolve} ({@link ClusterRecovery#resolveAll}: answers the conflicts each node resolved, by round),
 * {@code shutdown} (Infinispan's cluster-wide cache shutdown, which persists the topology), {@code snapshot LABEL} (on every node,
 * through {@link CacheHistory}), {@code asof LABEL ACKED_BEFORE ACKED_AFTER},
 * {@code exit}.
 */
public final class ClusterNode {
    static final String CACHE = "grid";
    /**
     * Not Infinispan's default 256: ClusterRecovery's scan takes time per segment on every node (256 cost
     * ThreeNodeClusterTest 26 s more than 64); 32 still give every segment entries at both owners in that test.
     */
    static final int SEGMENTS = 32;
    private static final int OWNERS = 2;
    private static final int CHUNK = 500;

    private final DefaultCacheManager manager;
    private final AdvancedCache<String, String> cache;

    private ClusterNode(String name, Path dir, boolean sifs, NodeProcess.Sizing sizing) {
        GlobalConfigurationBuilder global = GlobalConfigurationBuilder.defaultClusteredBuilder();
        global.serialization().addContextInitializer(CacheHistory.serializationContext());
        global.transport().clusterName("varve-loopback").nodeName(name).addProperty("configurationFile", "jgroups-loopback.xml");
        // Infinispan requires a store's location to lie below the global persistent location
        global.globalState().enable().persistentLocation(dir.getParent().toString());
        ConfigurationBuilder cb = new ConfigurationBuilder();
        cb.clustering().cacheMode(CacheMode.DIST_SYNC).hash().numOwners(OWNERS).numSegments(SEGMENTS);
        cb.clustering().stateTransfer().timeout(sizing.startSeconds, TimeUnit.SECONDS);
        // a node that finds no peer in time starts alone and merges later: resolve at the merge, never removing a value
        cb.clustering().partitionHandling().mergePolicy(MergePolicy.PREFERRED_NON_NULL);
        if (sifs) {
            cb.persistence().addSoftIndexFileStore().dataLocation(dir.resolve("data").toString()).indexLocation(dir.resolve("index").toString());
        } else {
            cb.persistence().addStore(VarveStoreConfigurationBuilder.class).location(dir.toString())
                    .dataRegionSize(sizing.dataRegionBytes).checkpointBufferSize(sizing.checkpointBufferBytes)
                    .captureBufferSize(1L << 20).walSegmentSize(sizing.walSegmentBytes);
        }
        manager = new DefaultCacheManager(global.build(), false);
        manager.defineConfiguration(CACHE, cb.build());
        manager.start();
        Cache<String, String> c = manager.getCache(CACHE);
        cache = c.getAdvancedCache();
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true);
        System.setOut(System.err); // only answers on the real stdout
        ClusterNode node = new ClusterNode(args[0], Path.of(args[1]), args[2].equals("sifs"), NodeProcess.Sizing.valueOf(args[3]));
        out.println("@@ started");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] a = line.trim().split(" ");
            try {
                if (a[0].equals("exit")) {
                    node.manager.stop();
                    out.println("@@ bye");
                    return;
                }
                out.println("@@ " + node.run(a));
            } catch (Exception | AssertionError e) {
                e.printStackTrace();
                out.println("@@ERR " + e);
            }
        }
    }

    private String run(String[] a) throws Exception {
        switch (a[0]) {
            case "put": {
                int from = Integer.parseInt(a[1]), to = Integer.parseInt(a[2]);
                for (int i = from; i < to; i += CHUNK) {
                    Map<String, String> m = new HashMap<>();
                    for (int j = i; j < Math.min(to, i + CHUNK); j++) m.put("k" + j, a[3] + "-" + j);
                    cache.putAll(m);
                }
                return "done";
            }
            case "check": {
                int from = Integer.parseInt(a[1]), to = Integer.parseInt(a[2]);
                return String.valueOf(count("k", from, to, j -> a[3] + "-" + j));
            }
            case "putttl": {
                int from = Integer.parseInt(a[1]), to = Integer.parseInt(a[2]);
                long lifespan = Long.parseLong(a[3]);
                Map<String, String> m = new HashMap<>();
                for (int j = from; j < to; j++) m.put("t" + j, "ttl-" + j);
                cache.putAll(m, lifespan, TimeUnit.MILLISECONDS);
                return "done";
            }
            case "checkttl": {
                return String.valueOf(count("t", Integer.parseInt(a[1]), Integer.parseInt(a[2]), j -> "ttl-" + j));
            }
            case "stream": {
                long from = Long.parseLong(a[1]);
                Path ack = Path.of(a[2]);
                Thread t = new Thread(() -> stream(from, ack), "stream-writer");
                t.setDaemon(true);
                t.start();
                return "streaming";
            }
            case "checkstream": {
                return String.valueOf(count("s", Integer.parseInt(a[1]), Integer.parseInt(a[2]), j -> "s-" + j));
            }
            case "topology": {
                CacheTopology t = cache.getDistributionManager().getCacheTopology();
                boolean stable = t.getPhase() == CacheTopology.Phase.NO_REBALANCE && t.getPendingCH() == null
                        && cache.getDistributionManager().isJoinComplete() && fullyOwned(t);
                return t.getMembers().size() + " " + stable;
            }
            case "local":
                return local();
            case "localentries":
                return localEntries(Path.of(a[1]));
            case "snapshot":
                return String.valueOf(CacheHistory.declare(manager, CACHE, a[1]).size());
            case "asof":
                return asOf(a[1], Long.parseLong(a[2]), Long.parseLong(a[3]));
            case "resolve":
                return ClusterRecovery.resolveAll(manager, CACHE).resolvedByRound().toString();
            case "shutdown":
                cache.shutdown();
                return "down";
            case "purge":
                cache.getExpirationManager().processExpiration();
                return "purged";
            default:
                throw new IllegalArgumentException("unknown command " + a[0]);
        }
    }

    /**
     * Whether every segment has as many owners as the members allow: after a node leaves, the coordinator installs a
     * topology without it, with no rebalance yet, before the rebalance that restores the second copies starts.
     */
    private static boolean fullyOwned(CacheTopology t) {
        int wanted = Math.min(OWNERS, t.getMembers().size());
        for (int s = 0; s < SEGMENTS; s++) if (t.getCurrentCH().locateOwnersForSegment(s).size() < wanted) return false;
        return true;
    }

    private interface Expected {
        String value(int index);
    }

    /** How many of the keys PREFIX<from..to) read their expected value (through the cluster). */
    private int count(String prefix, int from, int to, Expected expected) {
        int ok = 0;
        for (int i = from; i < to; i += CHUNK) {
            java.util.Set<String> keys = new java.util.HashSet<>();
            for (int j = i; j < Math.min(to, i + CHUNK); j++) keys.add(prefix + j);
            Map<String, String> got = cache.getAll(keys);
            for (int j = i; j < Math.min(to, i + CHUNK); j++) if (expected.value(j).equals(got.get(prefix + j))) ok++;
        }
        return ok;
    }

    private void stream(long from, Path ack) {
        Path next = ack.resolveSibling(ack.getFileName() + ".next");
        try {
            for (long i = from; ; i++) {
                cache.put("s" + i, "s-" + i);
                Files.writeString(next, Long.toString(i)); // then an atomic rename: a reader never sees a half-written number
                Files.move(next, ack, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (Exception e) {
            e.printStackTrace();
        }
    }

    /**
     * Reads the cache as of {@code label} and summarises it against the documented cut: bulk keys with their first
     * value and with any other value, stream keys acknowledged by {@code ackedBefore} that are missing, and stream
     * keys beyond {@code ackedAfter + 1} (started after the declaration returned) that are present.
     */
    private String asOf(String label, long ackedBefore, long ackedAfter) {
        Map<String, String> past = CacheHistory.readAsOf(manager, CACHE, label);
        long kFirst = 0, kOther = 0, sPresent = 0, sBeyond = 0;
        for (Map.Entry<String, String> e : past.entrySet()) {
            String k = e.getKey();
            if (k.startsWith("k")) {
                if (e.getValue().equals("v1-" + k.substring(1))) kFirst++;
                else kOther++;
            } else if (k.startsWith("s")) {
                long i = Long.parseLong(k.substring(1));
                if (i <= ackedBefore) sPresent++;
                if (i > ackedAfter + 1) sBeyond++;
            }
        }
        return "kFirst=" + kFirst + " kOther=" + kOther + " sMissing=" + (ackedBefore + 1 - sPresent) + " sBeyond=" + sBeyond;
    }

    /** Writes the entries this node's own store holds to {@code file}, "key TAB value" a line; answers how many. */
    private String localEntries(Path file) throws java.io.IOException {
        java.util.List<String> lines = new java.util.ArrayList<>();
        Flowable.fromPublisher(store().publishEntries(IntSets.immutableRangeSet(SEGMENTS), null, true))
                .blockingForEach(e -> lines.add(e.getKey() + "\t" + e.getValue()));
        Files.write(file, lines);
        return String.valueOf(lines.size());
    }

    private NonBlockingStore<?, ?> store() {
        return ComponentRegistry.of(cache).getComponent(PersistenceManager.class).getStores(NonBlockingStore.class).iterator().next();
    }

    /** Per key prefix, how many entries this node's own store holds, and how many of them this node does not own. */
    private String local() {
        NonBlockingStore<?, ?> store = store();
        LocalizedCacheTopology topology = cache.getDistributionManager().getCacheTopology();
        Map<Character, AtomicLong> byPrefix = new java.util.TreeMap<>();
        AtomicLong notOwned = new AtomicLong();
        Flowable.fromPublisher(store.publishKeys(IntSets.immutableRangeSet(SEGMENTS), null)).blockingForEach(k -> {
            String key = (String) k;
            byPrefix.computeIfAbsent(key.charAt(0), x -> new AtomicLong()).incrementAndGet();
            if (!topology.isWriteOwner(key)) notOwned.incrementAndGet();
        });
        long raw = store.approximateSize(IntSets.immutableRangeSet(SEGMENTS)).toCompletableFuture().join(); // expired entries included
        StringBuilder sb = new StringBuilder("raw=").append(raw).append(' ');
        for (char p : new char[]{'k', 's', 't'}) sb.append(p).append('=').append(byPrefix.getOrDefault(p, new AtomicLong()).get()).append(' ');
        return sb.append("notOwned=").append(notOwned.get()).toString();
    }
}
