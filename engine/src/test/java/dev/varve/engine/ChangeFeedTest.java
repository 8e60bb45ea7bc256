package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link Varve#follow}: an image at the feed's snapshot plus the calls, replayed in order, reproduce every later state. */
@Timeout(300)
class ChangeFeedTest {
    @TempDir
    Path dir;

    /** Replays the calls into per-table maps, remembering the state at each snapshot. */
    private static class Replica implements ChangeListener {
        final Map<String, Map<String, byte[]>> tables = new HashMap<>();
        final Map<Long, Map<String, Map<String, byte[]>>> atSnapshot = new ConcurrentHashMap<>();
        final List<String> events = new ArrayList<>();

        @Override
        public synchronized void onWrite(long lsn, List<Change> changes) {
            for (Change c : changes) {
                Map<String, byte[]> t = tables.computeIfAbsent(c.table(), k -> new HashMap<>());
                String key = new String(c.key(), StandardCharsets.UTF_8);
                if (c.value() == null) t.remove(key);
                else t.put(key, c.value());
            }
        }

        @Override
        public synchronized void onTableCreated(long lsn, String table, int partitions) {
            events.add("create " + table + "/" + partitions);
            tables.putIfAbsent(table, new HashMap<>());
        }

        @Override
        public synchronized void onPartitionDestroyed(long lsn, String table, int partition) {
            events.add("destroy " + table + "/" + partition);
        }

        @Override
        public synchronized void onSnapshot(long lsn, long id, int rank) {
            Map<String, Map<String, byte[]>> copy = new HashMap<>();
            tables.forEach((t, m) -> copy.put(t, new HashMap<>(m)));
            atSnapshot.put(id, copy);
            events.add("snapshot " + id + "/" + rank);
        }

        @Override
        public synchronized void onRank(long lsn, long id, int rank) {
            events.add("rank " + id + "/" + rank);
        }
    }

    @ParameterizedTest
    @EnumSource(RecoveryMode.class) // WAL_PHYSICAL's page log reads the value from the record the feed decodes too
    @Timeout(120)
    void replayedCallsReproduceEverySnapshotWrittenByConcurrentWriters(RecoveryMode mode) throws Exception {
        try (Varve store = Varve.open(SnapshotTest.config(dir, mode))) {
            store.table("a").put(bytes("before"), bytes("image"));
            Replica replica = new Replica();
            ChangeFeed feed = store.follow(1, replica);
            try (SnapshotView image = store.asOf(feed.snapshot())) {
                try (Cursor c = image.table("a").scan(null, null)) { // the replica starts from the image
                    while (c.next()) replica.tables.computeIfAbsent("a", k -> new HashMap<>()).put(new String(c.key(), StandardCharsets.UTF_8), c.value());
                }
            }
            CountDownLatch done = new CountDownLatch(2);
            for (int w = 0; w < 2; w++) {
                int writer = w;
                new Thread(() -> {
                    for (int i = 0; i < 3000; i++) {
                        String k = "w" + writer + "-" + (i % 500);
                        if (i % 7 == 0) store.table("a").remove(bytes(k));
                        else store.write(b -> b.put("a", bytes(k), bytes(k + "@" + System.nanoTime())).put("b", bytes(k), bytes("x")));
                    }
                    done.countDown();
                }, "writer-" + w).start();
            }
            List<Long> snapshots = new ArrayList<>();
            while (!done.await(5, TimeUnit.MILLISECONDS)) snapshots.add(store.snapshotNow());
            snapshots.add(store.snapshotNow(2));
            store.table("a").partition(0).destroy();
            feed.close();
            store.table("a").put(bytes("after"), bytes("close")); // not delivered
            for (long id : snapshots) {
                try (SnapshotView v = store.asOf(id)) {
                    for (String t : v.tables()) assertTableEquals(replica.atSnapshot.get(id).getOrDefault(t, Map.of()), v.table(t), "snapshot " + id);
                }
            }
            assertTrue(replica.events.contains("create b/" + store.config().partitions()), replica.events.toString());
            assertTrue(replica.events.contains("destroy a/0"), replica.events.toString());
            assertNull(replica.tables.get("a").get("after"), "no call after close");
        }
    }

    /**
     * A new table is announced before any write into it, even a write by another thread that found the table the moment
     * it existed: the creating thread, descheduled between making the table visible and announcing it (simulated by
     * a first listener that waits), let the other thread's write be announced first, and a standby replaying the
     * calls failed on a write into a table it did not have.
     */
    @Test
    @Timeout(60)
    void aTableIsAnnouncedBeforeAWriteIntoItByAnotherThread() throws Exception {
        // no checkpoint: one waiting for its lock would hold the other writer back until the creator went on
        VarveConfig config = SnapshotTest.config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE).toBuilder().checkpointFrequency(Duration.ofHours(1)).build();
        try (Varve store = Varve.open(config)) {
            CountDownLatch announcing = new CountDownLatch(1);
            CountDownLatch goOn = new CountDownLatch(1);
            store.follow(1, new ChangeListener() {
                @Override
                public void onWrite(long lsn, List<Change> changes) {
                }

                @Override
                public void onTableCreated(long lsn, String table, int partitions) {
                    announcing.countDown();
                    try {
                        goOn.await(30, TimeUnit.SECONDS); // the creating thread, descheduled here
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }

                @Override
                public void onPartitionDestroyed(long lsn, String table, int partition) {
                }

                @Override
                public void onSnapshot(long lsn, long id, int rank) {
                }

                @Override
                public void onRank(long lsn, long id, int rank) {
                }
            });
            Replica second = new Replica() {
                @Override
                public synchronized void onWrite(long lsn, List<Change> changes) {
                    for (Change c : changes) events.add("write " + c.table());
                }
            };
            store.follow(1, second);
            Thread creator = new Thread(() -> store.table("t"), "creator");
            creator.start();
            assertTrue(announcing.await(30, TimeUnit.SECONDS));
            boolean visible = store.tables().contains("t");
            if (visible) store.table("t").put(bytes("k"), bytes("v")); // another writer, finding the table there
            goOn.countDown();
            creator.join();
            if (!visible) store.table("t").put(bytes("k"), bytes("v"));
            List<String> events = second.events.stream().filter(e -> !e.startsWith("snapshot")).toList();
            assertEquals(List.of("create t/" + store.config().partitions(), "write t"), events);
        }
    }

    @Test
    @Timeout(60)
    void aListenerThatThrowsIsUnsubscribedAndTheWriteStands() {
        try (Varve store = Varve.open(SnapshotTest.config(dir, RecoveryMode.WAL_PHYSICAL))) {
            int[] calls = {0};
            store.follow(1, new Replica() {
                @Override
                public synchronized void onWrite(long lsn, List<Change> changes) {
                    calls[0]++;
                    throw new IllegalStateException("listener bug");
                }
            });
            store.table("t").put(bytes("k"), bytes("v1"));
            store.table("t").put(bytes("k"), bytes("v2"));
            assertEquals(1, calls[0]);
            assertArrayEquals(bytes("v2"), store.table("t").get(bytes("k")));
            assertThrows(IllegalArgumentException.class, () -> store.follow(1, null));
            assertThrows(IllegalArgumentException.class, () -> store.follow(9, new Replica()));
        }
    }

    /**
     * One thread's changes of every kind arrive once each, in WAL order (rising LSNs), as the calls the docs name: a
     * caller-placed table's creation with its options, a batch, a writeAndSnapshot's batch then its snapshot, a rank
     * raise (none for the current rank), a destroy; a remove of an absent key logs, and delivers, nothing.
     */
    @Test
    @Timeout(60)
    void oneThreadsChangesArriveOnceEachInWalOrder() {
        try (Varve store = Varve.open(SnapshotTest.config(dir, RecoveryMode.WAL_PHYSICAL))) {
            List<String> calls = new ArrayList<>();
            List<Long> lsns = new ArrayList<>();
            ChangeFeed feed = store.follow(1, new ChangeListener() {
                @Override
                public void onWrite(long lsn, List<Change> changes) {
                    lsns.add(lsn);
                    StringBuilder b = new StringBuilder("write");
                    for (Change c : changes) b.append(' ').append(c.table()).append('/').append(c.partition()).append(':')
                            .append(new String(c.key(), StandardCharsets.UTF_8)).append('=').append(c.value() == null ? "-" : new String(c.value(), StandardCharsets.UTF_8));
                    calls.add(b.toString());
                }

                @Override
                public void onTableCreated(long lsn, String table, TableOptions options) {
                    lsns.add(lsn);
                    calls.add("create " + table + " " + options.callerPlaced() + "/" + options.partitions());
                }

                @Override
                public void onPartitionDestroyed(long lsn, String table, int partition) {
                    lsns.add(lsn);
                    calls.add("destroy " + table + "/" + partition);
                }

                @Override
                public void onSnapshot(long lsn, long id, int rank) {
                    lsns.add(lsn);
                    calls.add("snapshot " + id + "/" + rank);
                }

                @Override
                public void onRank(long lsn, long id, int rank) {
                    lsns.add(lsn);
                    calls.add("rank " + id + "/" + rank);
                }
            });
            Table grid = store.table("grid", TableOptions.callerPlaced(8));
            grid.partition(5).put(bytes("a"), bytes("1"));
            grid.partition(5).remove(bytes("absent"));
            long s = store.writeAndSnapshot(b -> b.put("grid", 3, bytes("b"), bytes("2")).remove("grid", 5, bytes("a")), 2);
            store.rank(s, 2);
            store.rank(s, 3);
            grid.partition(3).destroy();
            long t = store.snapshotNow();
            feed.close();
            grid.partition(1).put(bytes("after"), bytes("close"));
            assertEquals(List.of("create grid true/8", "write grid/5:a=1", "write grid/3:b=2 grid/5:a=-", "snapshot " + s + "/2",
                    "rank " + s + "/3", "destroy grid/3", "snapshot " + t + "/1"), calls);
            for (int i = 1; i < lsns.size(); i++) assertTrue(lsns.get(i) > lsns.get(i - 1), "LSNs rise: " + lsns);
            assertTrue(lsns.get(0) > 0);
        }
    }

    /**
     * A listener that throws an Error (a failed assertion, an OutOfMemoryError while it buffers) is unsubscribed like
     * one that throws a RuntimeException: the write it was told of is applied and logged, so it must return, and be
     * committed, rather than report a failure for a write that stands; a writeAndSnapshot must still declare its snapshot.
     */
    @Test
    @Timeout(60)
    void aListenerThatThrowsAnErrorIsUnsubscribedAndTheWriteReturns() {
        try (Varve store = Varve.open(SnapshotTest.config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
            int[] calls = {0};
            store.follow(1, new Replica() {
                @Override
                public synchronized void onWrite(long lsn, List<Change> changes) {
                    calls[0]++;
                    throw new AssertionError("listener assertion");
                }
            });
            long s = store.writeAndSnapshot(b -> b.put("t", bytes("k"), bytes("v1")), 1);
            store.table("t").put(bytes("k"), bytes("v2"));
            assertEquals(1, calls[0]);
            assertTrue(store.snapshots().stream().anyMatch(i -> i.id() == s), "the batch's snapshot is declared");
            assertArrayEquals(bytes("v2"), store.table("t").get(bytes("k")));
        }
    }

    /**
     * A table's creation is delivered before any write to it: another thread that finds the new table as soon as it
     * is in the registry must not have its write delivered while the creation's call is still to come. The creation's
     * call is held (on a latch) until the other thread's write either was delivered, or is shown to wait for it.
     */
    @Test
    @Timeout(60)
    void aTablesCreationIsDeliveredBeforeAnyWriteToIt() throws Exception {
        try (Varve store = Varve.open(SnapshotTest.config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
            List<String> order = java.util.Collections.synchronizedList(new ArrayList<>()); // not Replica.events, which the anonymous class would see
            CountDownLatch creating = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            store.follow(1, new Replica() {
                @Override
                public void onTableCreated(long lsn, String table, int partitions) {
                    creating.countDown();
                    try {
                        release.await(20, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    order.add("create " + table);
                }

                @Override
                public void onWrite(long lsn, List<Change> changes) {
                    order.add("write " + changes.get(0).table());
                }
            });
            Thread creator = new Thread(() -> store.table("x"), "creator");
            creator.start();
            assertTrue(creating.await(20, TimeUnit.SECONDS));
            Thread writer = new Thread(() -> store.table("x").put(bytes("k"), bytes("v")), "writer");
            writer.start();
            writer.join(2000); // either it delivered its write by now (the bug), or it waits for the creation
            release.countDown();
            creator.join();
            writer.join();
            assertEquals(List.of("create x", "write x"), order);
        }
    }

    private static void assertTableEquals(Map<String, byte[]> expected, Table actual, String what) {
        Map<String, byte[]> seen = new HashMap<>();
        try (Cursor c = actual.scan(null, null)) {
            while (c.next()) seen.put(new String(c.key(), StandardCharsets.UTF_8), c.value());
        }
        assertEquals(expected.keySet(), seen.keySet(), what + ", table " + actual.name());
        for (Map.Entry<String, byte[]> e : expected.entrySet())
            assertTrue(Arrays.equals(e.getValue(), seen.get(e.getKey())), what + ": " + actual.name() + "/" + e.getKey());
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
