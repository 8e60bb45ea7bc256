package dev.varve.server;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** varve-bom gives a version to every published artifact: it left out varve-server, which users embed. */
@Timeout(30)
class BomTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

    @Test
    void theBomListsEveryPublishedModule() throws IOException {
        List<String> published = new ArrayList<>();
        for (String module : all("<module>([^<]+)</module>", Files.readString(ROOT.resolve("pom.xml")))) {
            if (module.equals("bom") || module.equals("benchmarks")) continue; // the list itself; a runnable job, not a library
            String pom = Files.readString(ROOT.resolve(module).resolve("pom.xml"));
            published.add(all("</parent>\\s*<artifactId>([^<]+)</artifactId>", pom).get(0));
        }
        List<String> listed = all("<artifactId>(varve-[^<]+)</artifactId>", Files.readString(ROOT.resolve("bom/pom.xml")));
        listed.remove("varve-bom");
        listed.remove("varve-parent");
        assertEquals(published, listed, "the modules of the build against the BOM's dependencies");
    }

    private static List<String> all(String regex, String text) {
        List<String> found = new ArrayList<>();
        Matcher m = Pattern.compile(regex).matcher(text);
        while (m.find()) found.add(m.group(1).trim());
        return found;
    }
}
