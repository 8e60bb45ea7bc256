package dev.varve.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Stream;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Review of 9b5d925: {@link Pagelog#forceFilled} runs on the checkpoint thread without the volume's monitor while the
 * archiver appends across segments and reclamation deletes the oldest; then the gated {@link Pagelog#force} must leave
 * every record appended so far durable (DurableSizes: each file's size at its last fsync) and nothing may fail.
 */
@Timeout(120)
class PagelogForceFilledConcurrencyTest {
    static final int PAGE = PagelogPowerCutTest.PAGE;
    static final long SEGMENT = PagelogPowerCutTest.SEGMENT; // 16 records

    @TempDir
    Path dir;

    @RepeatedTest(5)
    void forceFilledWhileTheArchiverAppendsAndReclamationRuns() throws Exception {
        PagelogPowerCutTest.DurableSizes io = new PagelogPowerCutTest.DurableSizes();
        Pagelog log = new Pagelog(io, dir, PAGE, SEGMENT);
        ReentrantLock gate = new ReentrantLock(); // the archive's append gate
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong forcedEnd = new AtomicLong();
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        Thread archiver = new Thread(() -> {
            ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
            try {
                for (long i = 0; i < 16 * 300 && !stop.get(); ) {
                    gate.lock();
                    try {
                        for (int k = 0; k < 1 + (int) (i % 7); k++, i++) log.append(i, i, i + 1, image, 0);
                        log.writeStaged();
                    } finally {
                        gate.unlock();
                    }
                }
            } catch (Throwable t) {
                failures.add(t);
            }
        });
        Thread reclaimer = new Thread(() -> {
            try {
                while (!stop.get()) log.reclaimOldest(forcedEnd.get(), (lo, hi) -> true);
            } catch (Throwable t) {
                failures.add(t);
            }
        });
        archiver.start();
        reclaimer.start();
        int flushes = 0;
        try {
            while (archiver.isAlive() && failures.isEmpty()) {
                log.forceFilled();
                gate.lock();
                try {
                    log.force();
                    long end = log.end();
                    for (Path p : segments()) {
                        Long durable = io.durable.get(p);
                        long size;
                        try {
                            size = Files.size(p);
                        } catch (java.nio.file.NoSuchFileException e) {
                            continue; // reclaimed meanwhile
                        }
                        assertEquals(size, durable == null ? -1 : durable, p + " is durable whole after the flush (end " + end + ")");
                    }
                    forcedEnd.set(end);
                } finally {
                    gate.unlock();
                }
                flushes++;
            }
        } finally {
            stop.set(true);
            archiver.join();
            reclaimer.join();
        }
        assertTrue(failures.isEmpty(), "failures: " + failures);
        assertTrue(flushes > 3, "flushes: " + flushes);
        log.close();
    }

    private List<Path> segments() throws java.io.IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().startsWith(PagelogDescriptor.FILE_PREFIX) && p.getFileName().toString().endsWith(".log")).toList();
        }
    }
}
