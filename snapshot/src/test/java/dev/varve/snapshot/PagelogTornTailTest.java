package dev.varve.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.varve.core.io.FileIOFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Recovery's cut to the mark also removes a record a power cut left partial at the Pagelog's end when the mark lies
 * at the last whole record: the next append would only overwrite it, and until then the file's tail read as damage
 * to the offline check, which open never reports.
 */
@Timeout(60)
class PagelogTornTailTest {
    @TempDir
    Path dir;

    @Test
    void aPartialLastRecordIsCutEvenWhenTheMarkNeedsEveryWholeRecord() throws IOException {
        FileIOFactory io = FileIOFactory.standard();
        ByteBuffer image = ByteBuffer.allocateDirect(PagelogDamageTest.PAGE);
        try (Pagelog log = new Pagelog(io, dir, PagelogDamageTest.PAGE, PagelogDamageTest.SEGMENT)) {
            for (int i = 0; i < 5; i++) log.append(i, 0, 1, image, 0);
            log.force();
        }
        Path segment = dir.resolve("pagelog-00000000.log");
        long whole = Files.size(segment);
        Files.write(segment, new byte[1536], StandardOpenOption.APPEND); // three sectors of a sixth record
        try (Pagelog log = new Pagelog(io, dir, PagelogDamageTest.PAGE, PagelogDamageTest.SEGMENT)) {
            assertEquals(5, log.end());
            log.truncate(5); // the mark needs all five
            assertEquals(5, log.end());
        }
        assertEquals(whole, Files.size(segment), "the partial record is cut");
    }
}
