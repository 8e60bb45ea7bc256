package dev.varve.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Review of 9b5d925. An archive written by a build before segment headers recorded their size is appended to by this
 * build: its last segment keeps its older header (records per segment 0). When the archiver fills that segment and
 * moves on, 9b5d925 no longer forces it, and a power cut before the next checkpoint leaves it short and not the last
 * — which open still refuses for a segment whose header records no size. A plain power loss after an upgrade must not
 * leave a store that does not open.
 */
@Timeout(60)
class PagelogUnsizedSegmentSwitchTest {
    static final int PAGE = PagelogPowerCutTest.PAGE;
    static final long SEGMENT = PagelogPowerCutTest.SEGMENT; // 16 records

    @TempDir
    Path dir;

    @Test
    void aPowerCutAfterTheArchiverLeftASegmentOfAnOlderBuildLeavesAnArchiveThatOpens() throws IOException {
        PagelogPowerCutTest.DurableSizes io = new PagelogPowerCutTest.DurableSizes();
        Path first = dir.resolve(PagelogDescriptor.fileName(0));
        try (FileChannel ch = FileChannel.open(first, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ch.write(PagelogDescriptor.header(PAGE, 0, 0, 0)); // as builds before the field wrote it
            ch.force(true);
        }
        io.durable.put(first, (long) PagelogDescriptor.HEADER_SIZE);
        ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
        Pagelog log = new Pagelog(io, dir, PAGE, SEGMENT); // this build opens the older archive and appends to its last segment
        for (int i = 0; i < 20; i++) log.append(i, 0, 1, image, 0); // fills segment 0, 4 records into segment 1
        log.writeStaged();
        io.powerCut(); // before the next checkpoint
        try (Pagelog reopened = new Pagelog(io, dir, PAGE, SEGMENT)) {
            reopened.truncate(0); // the recovered mark has none of these records
            assertEquals(0, reopened.end());
        }
        log.close();
    }
}
