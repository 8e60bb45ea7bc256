package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The checkpoint's archive flush fsyncs outside the lock the writer's path takes: while the flush is stuck in an
 * fsync — the disk is slow — a page's first change after a snapshot still captures its pre-state and goes on. The
 * fsync is held through the file-IO seam until the capture is done (or found stuck, which fails the test).
 */
@Timeout(120)
class FlushOutsideLockTest {
    private static final int PAGES = 8;
    /** How long a capture may take before it counts as stuck behind the fsync: a bound on a hang, not a timing. */
    private static final long STUCK_SECONDS = 30;
    private static final long MARK = 2;

    @TempDir
    Path dir;
    private final ExecutorService pool = Executors.newFixedThreadPool(2);

    @AfterEach
    void stopPool() {
        pool.shutdownNow();
    }

    @Test
    void aCaptureGoesOnWhileTheFlushWaitsForTheVolumesFsync() throws Exception {
        BlockingFsync io = new BlockingFsync();
        Agents agents = Agents.invoked(); // the archiver runs only when stepped
        PageMemory memory = memory();
        try (SnapshotArchive archive = open(io, agents, memory)) {
            change(memory, 0); // captured for snapshot 1
            archive.onMark(1, MARK);
            drain(agents);
            io.arm("pagelog-");
            Future<?> flush = pool.submit(() -> archive.beforeStartMarker(1, MARK));
            io.blocked.await(); // the flush is in its first fsync: the level's volume
            try {
                finishes(pool.submit(() -> change(memory, 1)), "a capture waited for the checkpoint flush's fsync of the volume");
            } finally {
                io.release.countDown();
            }
            flush.get();
            drain(agents);
            assertEquals(2, archive.maplog(1).size(), "both pre-states were captured and archived");
        }
    }

    /**
     * The archiver appends to the Maplog the flush is forcing: it waits for the fsync, but not holding the lock a
     * capture needs, so captures go on meanwhile (into the buffer, for the archiver to write once the fsync is done).
     */
    @Test
    void aCaptureGoesOnWhileTheArchiverWaitsForTheMaplogsFsync() throws Exception {
        BlockingFsync io = new BlockingFsync();
        Agents agents = Agents.invoked();
        PageMemory memory = memory();
        try (SnapshotArchive archive = open(io, agents, memory)) {
            change(memory, 0);
            archive.onMark(1, MARK);
            drain(agents);
            io.arm("maplog-");
            Future<?> flush = pool.submit(() -> archive.beforeStartMarker(1, MARK));
            io.blocked.await(); // the flush forced the volume and is in the Maplog's fsync
            Thread archiver = new Thread(() -> agents.invoker("archiver").invoke(), "archiver-step");
            try {
                finishes(pool.submit(() -> change(memory, 1)), "a capture waited for the checkpoint flush's fsync of the Maplog");
                archiver.start(); // it has a capture to archive, and waits for the fsync
                while (archiver.getState() == Thread.State.RUNNABLE || archiver.getState() == Thread.State.NEW) Thread.onSpinWait();
                finishes(pool.submit(() -> change(memory, 2)), "a capture waited behind the archiver, which waited for the Maplog's fsync");
            } finally {
                io.release.countDown();
            }
            flush.get();
            archiver.join();
            drain(agents);
            assertEquals(3, archive.maplog(1).size(), "every pre-state was captured and archived");
        }
    }

    private PageMemory memory() {
        return new PageMemory(new PageStore(FileIOFactory.standard(), dir.resolve("pages"), 4096), 16L << 20, 1L << 20);
    }

    /** An archive with snapshot 1 declared over {@link #PAGES} pages, none changed since. */
    private SnapshotArchive open(FileIOFactory io, Agents agents, PageMemory memory) {
        SnapshotArchive archive = new SnapshotArchive(io, ArchiveSettings.builder(dir.resolve("archive"), RankTreePolicy.levels(Retention.keepAll()))
                .pageSize(4096).skippyLevels(1).skippyNodeEntries(16).captureBufferBytes(1L << 20).segmentBytes(256L << 10).pageWindow(0).build());
        archive.useAgents(agents);
        archive.attach(memory);
        archive.recover(0, true);
        for (int i = 0; i < PAGES; i++) memory.releaseWrite(memory.acquireNew(PageId.of(1, i)));
        archive.declare(1, 1, 1, 1);
        return archive;
    }

    /** Changes page {@code i}; its first change after the snapshot captures its pre-state on this thread. */
    private static void change(PageMemory memory, int i) {
        Page p = memory.acquireWrite(PageId.of(1, i));
        p.putLong(64, i + 1);
        memory.releaseWrite(p);
    }

    private static void drain(Agents agents) {
        while (agents.invoker("archiver").invoke() > 0) {
            // archive every pending capture
        }
    }

    private static void finishes(Future<?> task, String stuck) throws Exception {
        try {
            task.get(STUCK_SECONDS, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            fail(stuck);
        }
    }

    /** The real file system, except that once armed the first fsync of a file named with a prefix blocks until released. */
    private static final class BlockingFsync extends ForwardingFileIOFactory {
        final CountDownLatch blocked = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        private volatile String prefix;

        void arm(String namePrefix) {
            prefix = namePrefix;
        }

        private void beforeForce(String name) throws IOException {
            String p = prefix;
            if (p == null || !name.startsWith(p) || blocked.getCount() == 0) return;
            blocked.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted in a held fsync of " + name);
            }
        }

        @Override
        public FileIO open(Path file, boolean create) throws IOException {
            String name = file.getFileName().toString();
            return new ForwardingFileIO(delegate.open(file, create)) {
                @Override
                public void force() throws IOException {
                    beforeForce(name);
                    delegate.force();
                }
            };
        }
    }
}
