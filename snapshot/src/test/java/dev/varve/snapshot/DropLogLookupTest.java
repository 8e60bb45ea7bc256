package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.store.PageStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The drop log holds one entry per snapshot ever dropped, so it grows for as long as a store runs: looking up an old
 * drop (asOf of a long-dropped id, droppedSnapshots) reads it in chunks, not an entry a read, and outside the state
 * lock every capture takes, so that the lookup's cost, which grows with the history, never stalls a writer.
 */
@Timeout(120)
class DropLogLookupTest {
    private static final int SNAPSHOTS = 20_000;
    /** How long the state lock may stay taken before it counts as held by the lookup: a bound on a hang, not a timing. */
    private static final long STUCK_SECONDS = 30;

    @TempDir
    Path dir;
    private final ExecutorService pool = Executors.newSingleThreadExecutor();

    @AfterEach
    void stopPool() {
        pool.shutdownNow();
    }

    @Test
    void anOldDropIsReadInChunksNotAnEntryARead() {
        CountingDropReads io = new CountingDropReads();
        try (SnapshotRegistry r = new SnapshotRegistry(io, dir, RankTreePolicy.levels(Retention.keepLast(2)), 64)) {
            r.prepare(0, true, ArchiveMarks.Mark.none(1));
            r.cut();
            for (long id = 1; id <= SNAPSHOTS; id++) r.declare(id, 1, 1000 + id, id, level -> 0);
            r.force();
            io.reads.set(0);
            DroppedSnapshot first = r.drops().dropped(1); // the oldest drop: the whole log is scanned
            assertNotNull(first, "snapshot 1 was dropped and says so");
            assertTrue(first.why().contains("rank 1"), first.why());
            int chunks = (SNAPSHOTS + 4095) / 4096; // reads of 4,096 entries (128 KiB) each
            assertTrue(io.reads.get() <= chunks, "a lookup through " + SNAPSHOTS + " drops read the drop log " + io.reads.get() + " times, more than its "
                    + chunks + " chunks");
        }
    }

    @Test
    void anOldDropIsLookedUpOutsideTheStateLock() throws Exception {
        CountingDropReads io = new CountingDropReads();
        PageMemory memory = new PageMemory(new PageStore(FileIOFactory.standard(), dir.resolve("pages"), 4096), 16L << 20, 1L << 20);
        try (SnapshotArchive archive = new SnapshotArchive(io, ArchiveSettings.builder(dir.resolve("archive"), RankTreePolicy.levels(Retention.keepLast(2)))
                .pageSize(4096).skippyLevels(1).skippyNodeEntries(16).captureBufferBytes(1L << 20).segmentBytes(256L << 10).pageWindow(0).build())) {
            archive.useAgents(Agents.invoked());
            archive.attach(memory);
            archive.recover(0, true);
            for (long id = 1; id <= SNAPSHOTS; id++) archive.declare(id, 1, 1000 + id, id);
            io.reads.set(0);
            // every read of the drop log checks, from another thread, that the state lock a capture takes is free
            io.duringRead = () -> {
                try {
                    pool.submit(() -> archive.find(SNAPSHOTS)).get(STUCK_SECONDS, TimeUnit.SECONDS);
                } catch (TimeoutException e) {
                    fail("the state lock, which every capture takes, was held while the drop log was scanned");
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            };
            assertNotNull(archive.dropped(1), "snapshot 1 was dropped and says so");
            assertTrue(io.reads.get() > 0, "the lookup read the drop log");
        }
    }

    /** The real file system, counting reads of the drop log (and running a check in each). */
    private static final class CountingDropReads extends ForwardingFileIOFactory {
        final AtomicInteger reads = new AtomicInteger();
        volatile Runnable duringRead;

        @Override
        public FileIO open(Path file, boolean create) throws IOException {
            FileIO f = delegate.open(file, create);
            if (!file.getFileName().toString().equals("drops.log")) return f;
            return new ForwardingFileIO(f) {
                @Override
                public int read(ByteBuffer dst, long position) throws IOException {
                    reads.incrementAndGet();
                    Runnable check = duringRead;
                    if (check != null) check.run();
                    return delegate.read(dst, position);
                }
            };
        }
    }
}
