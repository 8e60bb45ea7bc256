package dev.varve.core.io;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link PacedForce}: a range is forced whole, in order, in pieces of at most {@link PacedForce#PIECE_BYTES}, none
 * outside it — the durability a force promises does not depend on how it is cut; and the real factory's mappings
 * force that way up to their last byte.
 */
@Timeout(30)
class PacedForceTest {
    @TempDir
    Path dir;

    @Test
    void piecesCoverTheRangeExactlyInOrder() {
        int piece = PacedForce.PIECE_BYTES;
        int[][] ranges = {{0, 1}, {4096, piece}, {100, piece + 1}, {12_345, 3 * piece + 777}, {piece - 8, 2 * piece + 16}};
        for (int[] r : ranges) {
            List<int[]> pieces = new ArrayList<>();
            PacedForce.force((offset, length) -> pieces.add(new int[] {offset, length}), r[0], r[1]);
            int at = r[0];
            for (int[] p : pieces) {
                assertEquals(at, p[0], "pieces follow each other from the range's start");
                assertTrue(p[1] > 0 && p[1] <= piece, "a piece of " + p[1] + " bytes");
                at += p[1];
            }
            assertEquals(r[0] + r[1], at, "the pieces end where the range does");
            assertEquals((r[1] + piece - 1) / piece, pieces.size(), "as few pieces as the size allows");
        }
    }

    @Test
    void anEmptyRangeForcesNothing() {
        List<int[]> pieces = new ArrayList<>();
        PacedForce.force((offset, length) -> pieces.add(new int[] {offset, length}), 512, 0);
        assertTrue(pieces.isEmpty());
    }

    @Test
    void aMappingOfTheRealFileSystemForcesInPiecesToItsLastByte() throws IOException {
        int size = 2 * PacedForce.PIECE_BYTES + 8192;
        try (FileIO file = FileIOFactory.standard().open(dir.resolve("mapped"), true)) {
            file.write(ByteBuffer.allocate(size), 0);
            MappedRegion region = file.map(0, size);
            for (int i = 0; i < size; i += 4096) region.buffer().put(i, (byte) (i / 4096 + 1));
            region.force(4096, size - 4096); // three pieces, the last ending at the mapping's end
            ByteBuffer back = ByteBuffer.allocate(size);
            file.read(back, 0);
            for (int i = 0; i < size; i += 4096) assertEquals((byte) (i / 4096 + 1), back.get(i), "byte " + i);
        }
    }
}
