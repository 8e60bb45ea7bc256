package dev.varve.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A power cut keeps of each Pagelog segment what its last fsync made durable; a segment's creation is durable at once.
 * Records appended and not yet forced are past the mark and recovery cuts them — but the archive must still open:
 * its open refuses a segment that is not the last and holds fewer records than a full one (a file cut short, or
 * another archiveSegmentSize).
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

        @Override
        public FileIO open(Path file, boolean create) throws IOException {
            return new ForwardingFileIO(delegate.open(file, create)) {
                @Override
                public void force() throws IOException {
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
}
