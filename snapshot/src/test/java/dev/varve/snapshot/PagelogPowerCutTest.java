package dev.varve.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A power cut keeps of each Pagelog segment what its last fsync made durable; a segment's creation is durable at once.
 * Records appended and not yet forced are past the mark and recovery cuts them — but the archive must still open. A
 * segment filled is forced on a thread of its own once the next one begins, and by the next checkpoint's flush at the
 * latest, never on the archiver's path, so a power cut can leave a short segment that is not the last: open sets aside
 * the segments after it, and the recovery cut deletes them. A short segment whose header records no segment size (an
 * older archive) may be another archiveSegmentSize and is still refused.
 */
@Timeout(60)
class PagelogPowerCutTest {
    static final int PAGE = 4096;
    static final long SEGMENT = PagelogDamageTest.SEGMENT; // 16 records

    @TempDir
    Path dir;

    /** Remembers each file's size at its last fsync. */
    static final class DurableSizes extends ForwardingFileIOFactory {
        final Map<Path, Long> durable = new ConcurrentHashMap<>();
        /** A file whose fsyncs do not begin until {@link #release}: one still under way when the power goes. */
        private volatile Path held;
        private final CountDownLatch released = new CountDownLatch(1);

        void hold(Path file) {
            held = file;
        }

        void release() {
            released.countDown();
        }

        @Override
        public FileIO open(Path file, boolean create) throws IOException {
            return new ForwardingFileIO(delegate.open(file, create)) {
                @Override
                public void force() throws IOException {
                    if (file.equals(held)) {
                        try {
                            released.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            throw new IOException("interrupted before the fsync", e);
                        }
                    }
                    long size = delegate.size();
                    delegate.force();
                    durable.put(file, size);
                }
            };
        }

        @Override
        public void atomicMove(Path from, Path to) throws IOException {
            delegate.atomicMove(from, to);
            Long size = durable.remove(from);
            if (size != null) durable.put(to, size);
        }

        /** Cuts every file back to what its last fsync made durable: the unforced appends are lost. */
        void powerCut() throws IOException {
            for (Map.Entry<Path, Long> e : durable.entrySet()) {
                if (!e.getKey().toFile().exists()) continue;
                try (FileChannel ch = FileChannel.open(e.getKey(), StandardOpenOption.WRITE)) {
                    ch.truncate(e.getValue());
                }
            }
        }
    }

    @Test
    void unforcedAppendsAcrossSegmentsLeaveAnArchiveThatOpens() throws IOException {
        DurableSizes io = new DurableSizes();
        ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
        Pagelog log = new Pagelog(io, dir, PAGE, SEGMENT);
        for (int i = 0; i < 40; i++) log.append(i, 0, 1, image, 0); // fills segments 0 and 1, no force
        log.writeStaged();
        io.powerCut(); // the process dies with it: no close, no force
        try (Pagelog reopened = new Pagelog(io, dir, PAGE, SEGMENT)) {
            reopened.truncate(0); // what recovery does with records past a mark that has none
            assertEquals(0, reopened.end());
        }
        log.close();
    }

    /**
     * The flush makes a filled segment durable whether or not its own thread forced it yet; a power cut that comes while
     * that thread's force of the next filled segment is still under way leaves that segment short, and not the last.
     */
    @Test
    void aSegmentFilledIsForcedByTheFlushAndWhatFollowsAShortOneIsSetAside() throws IOException {
        DurableSizes io = new DurableSizes();
        ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
        Path first = dir.resolve(PagelogDescriptor.fileName(0));
        Path second = dir.resolve(PagelogDescriptor.fileName(1));
        Path third = dir.resolve(PagelogDescriptor.fileName(2));
        long full = PagelogDescriptor.segmentBytes(16, PAGE);
        Pagelog log = new Pagelog(io, dir, PAGE, SEGMENT);
        try {
            for (int i = 0; i < 20; i++) log.append(i, 0, 1, image, 0); // segment 0 filled, 4 records into segment 1
            log.writeStaged();
            log.forceFilled(); // a checkpoint's flush, before it stops the archiver
            assertEquals(full, io.durable.get(first));
            assertEquals(PagelogDescriptor.HEADER_SIZE, io.durable.get(second), "the segment appended to is left to the flush's force");
            io.hold(second); // its force, once it is filled, is still under way when the power goes
            for (int i = 20; i < 40; i++) log.append(i, 0, 1, image, 0); // segment 1 filled, 8 records into segment 2
            log.writeStaged();
            io.powerCut();
            try (Pagelog reopened = new Pagelog(io, dir, PAGE, SEGMENT)) {
                assertEquals(16, reopened.end(), "segment 1 was cut short: the archive ends there");
                assertTrue(Files.exists(third), "set aside, not deleted: the recovery cut decides");
                reopened.truncate(16); // the mark made segment 0 durable
                assertFalse(Files.exists(third));
                assertEquals(16, reopened.end());
            }
            try (Pagelog again = new Pagelog(io, dir, PAGE, SEGMENT)) {
                assertEquals(16, again.end());
            }
        } finally {
            io.release();
            log.close();
        }
    }

    @Test
    void aShortSegmentOfAnArchiveThatRecordsNoSegmentSizeIsStillRefused() throws IOException {
        FileIOFactory io = FileIOFactory.standard();
        for (int seg = 0; seg < 2; seg++) { // headers as builds before the field wrote them: 0 records a segment
            try (FileChannel ch = FileChannel.open(dir.resolve(PagelogDescriptor.fileName(seg)), StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ch.write(PagelogDescriptor.header(PAGE, seg, 0, 0));
            }
        }
        CorruptionException e = assertThrows(CorruptionException.class, () -> new Pagelog(io, dir, PAGE, SEGMENT));
        assertEquals(dir.resolve(PagelogDescriptor.fileName(0)), e.file(), e.getMessage());
        assertTrue(e.getMessage().contains("fewer than"), e.getMessage());
    }
}
