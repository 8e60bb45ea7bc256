package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
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

    @Test
    @Timeout(120)
    void replayedCallsReproduceEverySnapshotWrittenByConcurrentWriters() throws Exception {
        try (Varve store = Varve.open(SnapshotTest.config(dir, RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
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
