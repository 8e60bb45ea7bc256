package dev.varve.infinispan;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * What a restart of the whole three-node cluster (the setup of {@link ThreeNodeClusterTest}, global state persistence
 * on) brings back, with Varve's store and, for a fair comparison, with Infinispan's own {@code SoftIndexFileStore}:
 *
 * <ul>
 *   <li>after a clean cluster-wide shutdown ({@code Cache.shutdown()}), every key is readable as soon as the nodes are
 *       up, with no manual step: each node wrote the cache's topology to its global state, the restarted cluster
 *       waits for all its members and reinstalls that topology, so every node owns again exactly what its store holds;
 *   <li>after {@code kill -9} of all three, Infinispan 15.2 has no topology to restore: it writes one only during a
 *       clean cluster-wide shutdown, and deletes it once a restored cluster is stable. The nodes form a new
 *       consistent hash, in which a key's new owners may not be the nodes whose stores hold it, so a read through the
 *       cache can miss a key that is on disk. {@link ClusterRecovery#resolveAll} brings every key back to all
 *       its owners; a single conflict resolution does not, because it reads the resolving node's own copies from
 *       memory only. This restart also forms the cluster in two pieces that merge ({@link #startInTwoPieces}), as a
 *       restart under load can: no key may be lost in the merge either.
 * </ul>
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES)
class FullClusterRestartTest {
    private static final int KEYS = 20_000;
    private static final String[] NAMES = {"A", "B", "C"};

    @TempDir
    Path tmp;
    private final NodeProcess[] nodes = new NodeProcess[3];
    private int[] ports;

    /**
     * -Plong: with nine node starts and a merge it takes two to three minutes, which the default suite's 15-minute
     * budget cannot hold; {@link ThreeNodeClusterTest} covers the full crash and {@link ClusterRecovery} by default.
     */
    @Test
    @Tag("long")
    void varveCleanShutdownNeedsNoManualStepAndAFullCrashNeedsClusterRecovery() throws Exception {
        cleanShutdownAndFullCrash("varve");
    }

    /**
     * The same with Infinispan's own SoftIndexFileStore, the comparison that shows the full-crash gap is Infinispan's,
     * not the store's (-Plong: it adds a minute and a half to the default suite and tests no Varve code).
     */
    @Test
    @Tag("long")
    void softIndexFileStoreTheSame() throws Exception {
        cleanShutdownAndFullCrash("sifs");
    }

    private void cleanShutdownAndFullCrash(String store) throws Exception {
        ports = NodeProcess.freePorts(3);
        try {
            startAll(store);
            nodes[0].ask("put 0 " + KEYS + " v1", 300);
            assertEquals(String.valueOf(KEYS), nodes[1].ask("check 0 " + KEYS + " v1", 300), store + ": keys readable after the writes");
            assertEquals(2L * KEYS, copies(), store + ": copies in the stores after the writes");

            nodes[0].ask("shutdown", 300);
            for (NodeProcess n : nodes) n.stop();
            startAll(store);
            assertEquals(String.valueOf(KEYS), nodes[2].ask("check 0 " + KEYS + " v1", 300),
                    store + ": keys readable after a clean cluster shutdown and restart, with no manual step");
            assertEquals(2L * KEYS, copies(), store + ": copies in the stores after a clean cluster shutdown and restart");

            for (int i = 0; i < 3; i++) {
                nodes[i].kill();
                nodes[i] = null;
            }
            startInTwoPieces(store);
            String before = nodes[1].ask("check 0 " + KEYS + " v1", 300);
            long copiesBefore = copies();
            assertEquals(KEYS, distinctKeys(), store + ": distinct keys in the stores after kill -9 of all three and the restart's rebalance");
            String rounds = nodes[0].ask("resolve", 600);
            System.out.println(store + ": clean cluster restart " + KEYS + "/" + KEYS + " readable; after kill -9 of all three and the"
                    + " restart's rebalance " + before + "/" + KEYS + " readable, " + copiesBefore + " copies in the stores;"
                    + " conflicts each node resolved, by round: " + rounds);
            assertEquals(String.valueOf(KEYS), nodes[1].ask("check 0 " + KEYS + " v1", 300), store + ": keys readable after kill -9 of all three and ClusterRecovery");
            assertEquals(2L * KEYS, copies(), store + ": copies in the stores after kill -9 of all three and ClusterRecovery");
        } finally {
            for (NodeProcess n : nodes) if (n != null) n.close();
        }
    }

    /**
     * Starts A and B as a cluster of two, then C knowing no peer, so it forms a cluster of its own (what a node whose
     * join times out under load does); A and B's merge protocol finds it and the three merge. The merge resolves
     * conflicts with the cache's merge policy (PREFERRED_NON_NULL here), and ClusterRecovery repairs what is left.
     */
    private void startInTwoPieces(String store) throws Exception {
        for (int i = 0; i < 3; i++) {
            Path dir = tmp.resolve(NAMES[i]).resolve("store");
            nodes[i] = NodeProcess.launch(NAMES[i], dir, ports[i], i < 2 ? ports : new int[]{ports[2]}, store, NodeProcess.Sizing.SHORT);
            if (i == 1) {
                nodes[0].awaitStarted();
                nodes[1].awaitStarted();
                awaitStable(2);
            }
        }
        nodes[2].awaitStarted();
        awaitStable(3);
    }

    /** Copies of the k keys in the three stores together. */
    private long copies() throws Exception {
        long n = 0;
        for (NodeProcess p : nodes) {
            String local = p.ask("local", 120);
            System.out.println(p.name() + ": " + local);
            n += Long.parseLong(local.split(" ")[1].substring(2));
        }
        return n;
    }

    /** How many distinct keys the three stores hold together. */
    private long distinctKeys() throws Exception {
        return NodeProcess.storedEntries(Arrays.asList(nodes), tmp).size();
    }

    /** Launches all three nodes at once (a restored topology waits for every member), then waits for a stable topology. */
    private void startAll(String store) throws Exception {
        for (int i = 0; i < 3; i++) {
            Path dir = tmp.resolve(NAMES[i]).resolve("store");
            Files.createDirectories(dir);
            nodes[i] = NodeProcess.launch(NAMES[i], dir, ports[i], ports, store, NodeProcess.Sizing.SHORT);
        }
        for (NodeProcess n : nodes) n.awaitStarted();
        awaitStable(3);
    }

    /** Waits until every live node sees {@code members} members and no rebalance in progress. */
    private void awaitStable(int members) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        for (NodeProcess n : nodes) {
            if (n == null) continue;
            while (!n.ask("topology", 60).equals(members + " true")) {
                if (System.nanoTime() > deadline) throw new AssertionError(n.name() + " never reached a stable topology of " + members + " members");
                Thread.sleep(200);
            }
        }
    }
}
