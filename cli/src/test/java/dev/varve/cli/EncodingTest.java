package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Keys and values on the command line: text stays text, anything else is shown so that it reads back exactly. */
@Timeout(180)
class EncodingTest {
    @Test
    void everyEncodingReadsBackWhatItWrote() {
        byte[][] samples = {"plain key".getBytes(StandardCharsets.UTF_8), {0, 0, 0, 1}, {(byte) 0xff, (byte) 0xfe}, "hex:00".getBytes(StandardCharsets.UTF_8),
                "tab\there".getBytes(StandardCharsets.UTF_8), new byte[0]};
        for (Encoding e : Encoding.values()) for (byte[] b : samples) assertArrayEquals(b, e.decode(e.encode(b)), e + " " + e.encode(b));
        assertEquals("plain key", Encoding.utf8.encode(samples[0]));
        assertEquals("hex:00000001", Encoding.utf8.encode(samples[1]));
        assertEquals("hex", Encoding.utf8.encode("hex".getBytes(StandardCharsets.UTF_8)));
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> Encoding.hex.decode("xyz"));
        assertEquals(true, bad.getMessage().contains("'xyz' is not valid hex"));
    }
}
