package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.VarveConfig;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * Each open store is an MXBean in the platform MBean server, read here through the server (not the object) while
 * writes and checkpoints run, and compared with {@link Varve#metrics()}; two stores are two MBeans, a closed store
 * none; background threads carry the store's name.
 */
@Timeout(300)
@Isolated("reads the platform MBean server and the threads of every store in the JVM")
class JmxTest {
    private static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();

    @TempDir
    Path tmp;

    private static Set<ObjectName> stores() throws Exception {
        return SERVER.queryNames(new ObjectName("dev.varve:type=Store,*"), null);
    }

    private static long attr(ObjectName n, String a) throws Exception {
        return ((Number) SERVER.getAttribute(n, a)).longValue();
    }

    private VarveConfig config(String dir, String name) {
        return VarveConfig.builder().path(tmp.resolve(dir)).name(name).dataRegionSize(32L << 20).checkpointFrequency(Duration.ofMillis(50))
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void attributesFollowTheMetricsDuringWritesAndCheckpoints() throws Exception {
        try (Varve store = Varve.open(config("a", "jmx-a"))) {
            ObjectName n = new ObjectName("dev.varve:type=Store,name=" + ObjectName.quote("jmx-a"));
            assertTrue(SERVER.isRegistered(n));
            assertEquals("jmx-a", SERVER.getAttribute(n, "Name"));
            assertEquals(false, SERVER.getAttribute(n, "ReadOnly"));
            AtomicBoolean stop = new AtomicBoolean();
            Thread writer = new Thread(() -> {
                Table t = store.table("t");
                for (int i = 0; !stop.get(); i++) t.put(("k" + (i % 5000)).getBytes(StandardCharsets.UTF_8), new byte[200]);
            });
            writer.start();
            while (store.metrics().writes() == 0) Thread.sleep(1); // the writer is under way (bounded by @Timeout)
            try {
                for (int round = 0; round < 20; round++) {
                    VarveMetrics m = store.metrics();
                    long writes0 = m.writes();
                    long wal0 = m.walBytesWritten();
                    long cps0 = m.checkpointsCompleted();
                    long pages0 = m.checkpointPagesWritten();
                    long writes = attr(n, "Writes");
                    long wal = attr(n, "WalBytesWritten");
                    long cps = attr(n, "CheckpointsCompleted");
                    long pages = attr(n, "CheckpointPagesWritten");
                    assertTrue(writes0 <= writes && writes <= m.writes(), writes0 + " <= " + writes + " <= " + m.writes());
                    assertTrue(wal0 <= wal && wal <= m.walBytesWritten());
                    assertTrue(cps0 <= cps && cps <= m.checkpointsCompleted());
                    assertTrue(pages0 <= pages && pages <= m.checkpointPagesWritten());
                    if (round % 5 == 0) store.checkpoint().join();
                    store.snapshotNow();
                }
            } finally {
                stop.set(true);
                writer.join();
            }
            CheckpointStats last = store.checkpoint().join();
            VarveMetrics m = store.metrics();
            assertTrue(m.writes() > 0 && m.checkpointsCompleted() >= 5, "the four checkpoints of the loop and the last one");
            // quiescent: every attribute equals its metric (the background trigger may not run a checkpoint now:
            // the store is clean, nothing triggers one)
            for (String a : new String[]{"Writes", "Reads", "WalBytesWritten", "RecoveryFileBytesWritten", "PagesRead", "PagesEvicted",
                    "CopyOnWritePages", "CheckpointBufferPages", "ArchiveBytes", "ArchiveBytesReclaimed", "ArchiveBytesCopiedByRanking"}) {
                long metric = (long) VarveMetrics.class.getMethod(Character.toLowerCase(a.charAt(0)) + a.substring(1)).invoke(m);
                assertEquals(metric, attr(n, a), a);
            }
            assertEquals(m.archiveDeadBytes(), attr(n, "ArchiveDeadBytes"));
            assertArrayEquals(m.archiveBytesPerLevel(), (long[]) SERVER.getAttribute(n, "ArchiveBytesPerLevel"));
            assertEquals(20, attr(n, "LiveSnapshots"));
            assertEquals(null, SERVER.getAttribute(n, "Failure"), "a sound store has no failure");
            long id = attr(n, "LastCheckpointId");
            assertTrue(id >= last.id(), id + " vs " + last.id());
            if (id == last.id()) {
                assertEquals(last.pages(), attr(n, "LastCheckpointPages"));
                assertEquals(last.totalNanos(), attr(n, "LastCheckpointTotalNanos"));
                assertEquals(last.recoveryData(), SERVER.getAttribute(n, "LastCheckpointRecoveryData"));
                assertEquals(last.reason(), SERVER.getAttribute(n, "LastCheckpointReason"));
            }
        }
    }

    @Test
    @Timeout(value = 1, unit = TimeUnit.MINUTES)
    @SuppressWarnings("try") // closes a store inside its try on purpose: close is idempotent
    void twoStoresTwoMBeansClosedStoreNone() throws Exception {
        Set<ObjectName> before = stores();
        VarveConfig b = VarveConfig.builder().path(tmp.resolve("b")).dataRegionSize(16L << 20)
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build(); // named by its path
        try (Varve one = Varve.open(config("a", "jmx-one")); Varve two = Varve.open(b)) {
            Set<String> names = stores().stream().filter(x -> !before.contains(x)).map(x -> x.getKeyProperty("name")).collect(Collectors.toSet());
            assertEquals(Set.of(ObjectName.quote("jmx-one"), ObjectName.quote(b.name())), names);
            Set<String> threads = Thread.getAllStackTraces().keySet().stream().map(Thread::getName).collect(Collectors.toSet());
            assertTrue(threads.contains("varve-checkpointer [jmx-one]"), threads.toString());
            assertTrue(threads.contains("varve-archiver [" + b.name() + "]"), threads.toString());
            IllegalStateException dup = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                    () -> Varve.open(config("c", "jmx-one")));
            assertTrue(dup.getMessage().contains("named 'jmx-one'"), dup.getMessage());
            two.close();
            assertEquals(Set.of(ObjectName.quote("jmx-one")),
                    stores().stream().filter(x -> !before.contains(x)).map(x -> x.getKeyProperty("name")).collect(Collectors.toSet()));
        }
        assertEquals(before, stores());
        try (Varve reopened = Varve.open(config("c", "jmx-one"))) { // the refused open left nothing registered or locked
            assertEquals(1, stores().size() - before.size());
        }
    }

    @Test
    @Timeout(value = 1, unit = TimeUnit.MINUTES)
    @SuppressWarnings("try") // the newer store is only held open
    void closingAStaleHandleAgainLeavesTheNewerStoresMBean() throws Exception {
        Set<ObjectName> before = stores();
        Varve old = Varve.open(config("a", "jmx-stale"));
        old.close();
        try (Varve newer = Varve.open(config("a", "jmx-stale"))) {
            assertEquals(1, stores().size() - before.size());
            old.close(); // idempotent: the name is the newer store's now
            assertEquals(1, stores().size() - before.size(), "the stale handle's second close removed the newer store's MBean");
        }
        assertEquals(before, stores());
    }
}
