package dev.varve.infinispan;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Three grid nodes on loopback, each its own JVM with its own Varve store directory, JGroups TCP on 127.0.0.1 with
 * static discovery, a distributed synchronous cache with 2 owners and 32 segments. Real kill -9 of child JVMs.
 */
@Timeout(value = 15, unit = TimeUnit.MINUTES)
class ThreeNodeClusterTest {
    /** Most keys a run of short-lived nodes takes ({@link NodeProcess.Sizing}); more, as the soak's, get soak nodes. */
    private static final int SHORT_NODE_KEYS = 100_000;
    private int keys;
    private long started;

    @TempDir
    Path tmp;
    private final String[] names = {"A", "B", "C"};
    private final NodeProcess[] nodes = new NodeProcess[3];
    private int[] ports;

    private Path dir(int i) {
        return tmp.resolve(names[i]).resolve("store");
    }

    private NodeProcess start(int i) throws Exception {
        Files.createDirectories(dir(i));
        nodes[i] = NodeProcess.start(names[i], dir(i), ports[i], ports, keys > SHORT_NODE_KEYS ? NodeProcess.Sizing.SOAK : NodeProcess.Sizing.SHORT);
        return nodes[i];
    }

    private List<NodeProcess> live() {
        List<NodeProcess> out = new ArrayList<>();
        for (NodeProcess n : nodes) if (n != null) out.add(n);
        return out;
    }

    /** Waits until every live node sees {@code members} members and no rebalance in progress. */
    private void awaitStable(int members) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        for (NodeProcess n : live()) {
            while (!n.ask("topology", 60).equals(members + " true")) {
                if (System.nanoTime() > deadline) throw new AssertionError(n.name() + " never reached a stable topology of " + members + " members");
                Thread.sleep(200);
            }
        }
    }

    /** What each live node's own store holds: prefix -> count, plus "notOwned". */
    private Map<String, Long> local(NodeProcess n) throws Exception {
        Map<String, Long> m = new HashMap<>();
        for (String kv : n.ask("local", 120).trim().split(" ")) {
            String[] p = kv.split("=");
            m.put(p[0], Long.parseLong(p[1]));
        }
        return m;
    }

    /** The last stream index the writer saw acknowledged, -1 before the first. */
    private static long acked(Path ack) throws Exception {
        return Files.exists(ack) ? Long.parseLong(Files.readString(ack).trim()) : -1;
    }

    /** Waits until the writer has acknowledged stream index {@code index}. */
    private static void awaitAcked(Path ack, long index) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (acked(ack) < index) {
            if (System.nanoTime() > deadline) throw new AssertionError("the stream acknowledged " + acked(ack) + ", never " + index);
            Thread.sleep(20);
        }
    }

    /** Entries in all stores, expired ones included. */
    private long rawEntries() throws Exception {
        long n = 0;
        for (NodeProcess p : live()) n += local(p).get("raw");
        return n;
    }

    /** Every key of {@code prefix} is in exactly its owners' stores: nobody holds a key it does not own, and copies add up. */
    private void assertExactlyOwnersHold(String prefix, long keys, String when) throws Exception {
        long copies = 0;
        for (NodeProcess n : live()) {
            Map<String, Long> m = local(n);
            assertEquals(0L, m.get("notOwned"), when + ": " + n.name() + " stores keys it does not own: " + m);
            copies += m.get(prefix);
        }
        assertEquals(2 * keys, copies, when + ": copies of the " + keys + " keys across the stores");
        log(when + ": " + copies + " copies of " + keys + " keys, all at their owners");
    }

    /** Prints a step with the seconds since the run began, so a slow step shows in the report. */
    private void log(String what) {
        System.out.printf("[%6.1f s] %s%n", (System.nanoTime() - started) / 1e9, what);
    }

    private void inParallel(String... perNodeCommands) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(perNodeCommands.length);
        try {
            List<Future<String>> f = new ArrayList<>();
            for (int i = 0; i < perNodeCommands.length; i++) {
                NodeProcess n = nodes[i];
                String c = perNodeCommands[i];
                f.add(pool.submit(() -> n.ask(c, 600)));
            }
            for (Future<String> x : f) x.get();
        } finally {
            pool.shutdown();
        }
    }

    /**
     * 4,000 keys: about 125 in each of the 32 segments, so every segment has entries at both its owners, the kill and
     * the restart move segments that hold data, and the full crash still leaves a thousand and more keys for
     * resolveAll. The writes, reads and store scans take CPU in proportion to the keys on all three nodes (50,000 took
     * about 20 s of the test's 129 s here, 10,000 about 5); resolveAll's scan hardly depends on them but grows with the
     * segments (with Infinispan's default 256 it took about 36 s, with 64 about 10 s; the cluster's behaviour does not
     * depend on the count). Most of what is left is the seven node starts. {@link #aMillionKeys} is the soak.
     */
    @Test
    void writesKillsRestartsExpiryAndFullCrash() throws Exception {
        run(Integer.getInteger("varve.clusterKeys", 4_000));
    }

    /** The same with a million keys (-Plong). */
    @Test
    @Tag("long")
    @Timeout(value = 60, unit = TimeUnit.MINUTES)
    void aMillionKeys() throws Exception {
        run(1_000_000);
    }

    private void run(int keyCount) throws Exception {
        keys = keyCount;
        started = System.nanoTime();
        ports = NodeProcess.freePorts(3);
        try {
            for (int i = 0; i < 3; i++) start(i);
            awaitStable(3);
            log("three nodes stable");

            // the writes, a third from each node, in parallel
            long t0 = System.nanoTime();
            int third = keys / 3;
            inParallel("put 0 " + third + " v1", "put " + third + " " + 2 * third + " v1", "put " + 2 * third + " " + keys + " v1");
            log(String.format("%d writes in %.1f s", keys, (System.nanoTime() - t0) / 1e9));
            assertEquals(String.valueOf(keys), nodes[1].ask("check 0 " + keys + " v1", 600));
            assertExactlyOwnersHold("k", keys, "after " + keys + " writes");

            // kill -9 of one node: every key readable, rebalance restores two copies on the survivors
            nodes[2].kill();
            nodes[2] = null;
            awaitStable(2);
            assertEquals(String.valueOf(keys), nodes[0].ask("check 0 " + keys + " v1", 600), "keys readable after kill -9 of C");
            assertExactlyOwnersHold("k", keys, "after kill -9 of C and rebalance");

            // C restarts on its directory: recovers, rejoins, and keeps only the segments it owns now
            start(2);
            awaitStable(3);
            assertExactlyOwnersHold("k", keys, "after C restarted and rejoined");
            assertEquals(String.valueOf(keys), nodes[2].ask("check 0 " + keys + " v1", 600), "keys readable through the restarted node");

            // entries with a lifespan are gone after an expiry purge
            int ttlKeys = 1000;
            nodes[0].ask("putttl 0 " + ttlKeys + " 5000", 300);
            long ttlWritten = System.nanoTime(); // every lifespan began before the answer
            assertExactlyOwnersHold("t", ttlKeys, "lifespan entries written");
            assertEquals(2L * keys + 2L * ttlKeys, rawEntries(), "stored entries before expiry");
            // let the 5 s lifespan pass, with half a second to spare, counted from the answer: the checks above took part of it
            long lifespanLeft = ttlWritten + TimeUnit.MILLISECONDS.toNanos(5500) - System.nanoTime();
            if (lifespanLeft > 0) TimeUnit.NANOSECONDS.sleep(lifespanLeft);
            // each node purges its own store, all three at once as their expiration reapers would (one after another they
            // took about 20 s here, most of the test's time after the writes)
            inParallel("purge", "purge", "purge");
            log("expired entries purged");
            assertEquals(2L * keys, rawEntries(), "stored entries (expired ones included) after the purge");

            // a cluster snapshot while a writer is mid-stream; the writer keeps going into the full crash below
            Path ack = tmp.resolve("stream.ack");
            nodes[0].ask("stream 0 " + ack, 30);
            awaitAcked(ack, 20); // acknowledged writes before the declaration, which its cut must hold
            long ackedBefore = acked(ack);
            assertEquals("3", nodes[1].ask("snapshot L1", 300), "nodes that declared L1");
            long ackedAfter = acked(ack);
            nodes[2].ask("put 0 1000 v2", 300); // overwrite after the declaration: invisible as of L1
            String cut = "kFirst=" + keys + " kOther=0 sMissing=0 sBeyond=0";
            assertEquals(cut, nodes[2].ask("asof L1 " + ackedBefore + " " + ackedAfter, 600), "L1 as of its cut (stream acked "
                    + ackedBefore + " before, " + ackedAfter + " after the declaration)");
            log("cluster snapshot L1 read back as its documented cut: " + cut + " (stream acked " + ackedBefore + " / " + ackedAfter + ")");

            // kill -9 of all three while the writer is mid-stream: every acknowledged write is back (LOG_ONLY)
            awaitAcked(ack, ackedAfter + 20); // acknowledged writes after the declaration too, which the crash must keep
            for (int i = 0; i < 3; i++) {
                nodes[i].kill();
                nodes[i] = null;
            }
            int acked = (int) acked(ack) + 1;
            assertTrue(acked > 0, "the stream acknowledged nothing");
            for (int i = 0; i < 3; i++) start(i);
            awaitStable(3);
            log("three nodes restarted after the full crash, stable");
            // Every node recovered its store, but the cluster does not know who held what: Infinispan 15.2 persists a
            // cache's topology only during a clean cluster-wide shutdown (Cache.shutdown()) and deletes it once a restored
            // cluster is stable, so after kill -9 of all nodes it builds a new consistent hash, which may make a node
            // without a copy a key's owner. ClusterRecovery gives each key its surviving value on all its owners.
            log("full crash: conflicts each node resolved, by round: " + nodes[0].ask("resolve", 1200));
            Map<String, Set<String>> stored = NodeProcess.storedEntries(live(), tmp);
            for (int j = 0; j < keys; j++) {
                String value = (j < 1000 ? "v2-" : "v1-") + j;
                assertTrue(stored.getOrDefault("k" + j, Set.of()).contains(value), "after the full crash no store holds k" + j + " = " + value);
            }
            for (int j = 0; j < acked; j++) {
                assertTrue(stored.getOrDefault("s" + j, Set.of()).contains("s-" + j), "after the full crash no store holds acknowledged s" + j);
            }
            assertEquals(String.valueOf(keys - 1000), nodes[1].ask("check 1000 " + keys + " v1", 600), "bulk keys readable after the full crash");
            assertEquals("1000", nodes[1].ask("check 0 1000 v2", 600), "overwritten keys readable with their last value after the full crash");
            assertEquals(String.valueOf(acked), nodes[2].ask("checkstream 0 " + acked, 600), "acknowledged stream writes readable after the full crash");
            assertEquals("0", nodes[0].ask("checkttl 0 " + ttlKeys, 300), "expired entries came back after the restart");
            long kCopies = 0;
            long sCopies = 0;
            long raw = 0;
            for (NodeProcess n : live()) {
                Map<String, Long> m = local(n);
                assertEquals(0L, m.get("notOwned"), "after the full crash: " + n.name() + " stores keys it does not own: " + m);
                kCopies += m.get("k");
                sCopies += m.get("s");
                raw += m.get("raw");
            }
            assertEquals(2L * keys, kCopies, "after the full crash: copies of the " + keys + " keys");
            assertTrue(sCopies >= 2L * acked && sCopies <= 2L * (acked + 1), "after the full crash: " + sCopies + " copies of " + acked + " stream writes");
            assertEquals(kCopies + sCopies, raw, "after the full crash the stores hold entries beyond the live keys: an expired entry came back");
            log("full crash: " + acked + " acknowledged stream writes all back; " + kCopies + " copies of " + keys
                    + " keys, " + sCopies + " of the stream, all at owners");
            assertEquals(cut, nodes[0].ask("asof L1 " + ackedBefore + " " + ackedAfter, 600), "L1 after the full crash");
        } finally {
            for (NodeProcess n : nodes) if (n != null) n.close();
        }
    }
}
