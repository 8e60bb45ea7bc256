package dev.varve.core.io;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@link CorruptionException#what}: the finding that verify's damage reports print beside the file and offset they
 * name themselves; cutting the message at its first " at offset " lost the end of a finding that names an offset.
 */
@Timeout(120)
class CorruptionExceptionTest {
    @Test
    void whatIsTheFindingEvenWhenItNamesAnotherOffset() {
        Path file = Path.of("archive", "pagelog-1.log");
        CorruptionException e = new CorruptionException("record 3 is damaged and a valid record follows at offset 4096", file, 2048);
        assertEquals("record 3 is damaged and a valid record follows at offset 4096", e.what());
        assertEquals("record 3 is damaged and a valid record follows at offset 4096 at offset 2048 [file " + file + "]", e.getMessage());
        assertEquals(2048, e.offset());
    }
}
