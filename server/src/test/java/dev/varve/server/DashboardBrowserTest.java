package dev.varve.server;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.engine.SnapshotInfo;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

import java.io.File;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The dashboard in a real browser (Debian's chromium driven by chromedriver through Selenium) over a live store: the
 * charts and the snapshot timeline show what the JSON endpoints report, and they move as the store writes. Saves a
 * screenshot to {@code target/dashboard.png}.
 */
@Timeout(180)
class DashboardBrowserTest {
    @TempDir
    Path dir;

    @Test
    @Timeout(240)
    void dashboardShowsWhatTheApiReportsAndFollowsTheStore() throws Exception {
        AtomicBoolean paused = new AtomicBoolean();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> writerFailure = new AtomicReference<>();
        try (Varve store = Varve.open(SmallStore.fresh(dir.resolve("store")).checkpointFrequency(Duration.ofHours(1))
                .retention(RankTreePolicy.levels(Retention.keepLast(4), Retention.keepLast(3), Retention.keepAll())).build());
             VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0),
                     new ServerOptions().sampleInterval(Duration.ofMillis(200)))) {
            Thread writer = new Thread(() -> writeUntilStopped(store, paused, stop, writerFailure), "writer");
            writer.start();
            HttpProbe api = new HttpProbe(server.address());
            WebDriver browser = chromium(dir.resolve("chromium-profile"));
            try {
                browser.get("http://127.0.0.1:" + server.address().getPort() + "/?interval=300");
                WebDriverWait wait = new WebDriverWait(browser, Duration.ofSeconds(60), Duration.ofMillis(200));
                wait.ignoring(StaleElementReferenceException.class); // the page redraws its charts on every poll
                wait.until(d -> d.findElements(By.cssSelector("#timeline .dropped")).size() >= 2
                        && d.findElements(By.cssSelector("#chart-checkpoints g.cp")).size() >= 3);

                paused.set(true); // a still store: the page must settle on exactly what the API says
                Thread.sleep(500);
                List<SnapshotInfo> live = store.snapshots();
                new SnapshotBackup(server.address(), live.get(live.size() - 1).id(), dir.resolve("backup")).run(); // shipping figures off 0
                String[] difference = {null};
                wait.withMessage(() -> "the page never showed what the API reports: " + difference[0])
                        .until(d -> (difference[0] = pageMatchesApi(d, api, store)) == null);
                assertEquals("live", browser.findElement(By.id("status")).getText());
                assertEquals("1", attrs(browser, "#stat-shipped", "data-value").get(0), "the backup above, shown");
                Path shot = ((TakesScreenshot) browser).getScreenshotAs(OutputType.FILE).toPath();
                Files.copy(shot, Path.of("target", "dashboard.png"), StandardCopyOption.REPLACE_EXISTING);

                long writesBefore = Long.parseLong(attrs(browser, "#stat-writes", "data-value").get(0));
                long lastSnapshotBefore = ids(browser, "#timeline circle.snap").stream().mapToLong(Long::longValue).max().orElse(0);
                long lastCheckpointBefore = ids(browser, "#chart-checkpoints g.cp").stream().mapToLong(Long::longValue).max().orElse(0);
                paused.set(false);
                wait.until(d -> Long.parseLong(attrs(d, "#stat-writes", "data-value").get(0)) > writesBefore
                        && ids(d, "#timeline circle.snap").stream().anyMatch(id -> id > lastSnapshotBefore)
                        && ids(d, "#chart-checkpoints g.cp").stream().anyMatch(id -> id > lastCheckpointBefore));
                assertEquals(List.of("wal", "archive"), attrs(browser, "#chart-bytes path.series", "data-name"));
            } finally {
                browser.quit();
                stop.set(true);
                writer.join(30_000);
            }
            if (writerFailure.get() != null) throw new AssertionError("writer failed", writerFailure.get());
        }
    }

    /** Puts (some values larger than a page), a snapshot of rank 1, 1, 2, 1, 3, ... and a checkpoint every few hundred ms. */
    private static void writeUntilStopped(Varve store, AtomicBoolean paused, AtomicBoolean stop, AtomicReference<Throwable> failure) {
        try {
            Random rnd = new Random(5);
            int[] ranks = {1, 1, 2, 1, 3};
            for (int round = 0; !stop.get(); round++) {
                if (paused.get()) {
                    Thread.sleep(20);
                    round--;
                    continue;
                }
                for (int i = 0; i < 200; i++) {
                    byte[] v = new byte[rnd.nextInt(10) == 0 ? 9000 : 200];
                    rnd.nextBytes(v);
                    store.table(i % 2 == 0 ? "accounts" : "orders").put(("k" + rnd.nextInt(5000)).getBytes(), v);
                }
                store.snapshotNow(ranks[round % ranks.length]);
                store.checkpoint().join();
                Thread.sleep(150);
            }
        } catch (Throwable t) {
            failure.set(t);
        }
    }

    /** Null when the page shows exactly what the API reports now, else the first difference. */
    private static String pageMatchesApi(WebDriver page, HttpProbe api, Varve store) {
        try {
            Map<String, Object> snaps = HttpProbe.json(api.get("/api/snapshots"));
            Map<Long, Long> liveApi = new TreeMap<>();
            for (Object o : (List<?>) snaps.get("live")) liveApi.put(num(((Map<?, ?>) o).get("id")), num(((Map<?, ?>) o).get("rank")));
            Map<Long, Long> livePage = pairs(page, "#timeline circle.snap", "data-rank");
            if (!liveApi.equals(livePage)) return "live snapshots: api " + liveApi + ", page " + livePage;
            List<Long> droppedApi = ((List<?>) snaps.get("dropped")).stream().map(o -> num(((Map<?, ?>) o).get("id"))).sorted().collect(Collectors.toList());
            List<Long> droppedPage = ids(page, "#timeline .dropped");
            if (!droppedApi.equals(droppedPage)) return "dropped: api " + droppedApi + ", page " + droppedPage;

            Map<Long, Long> cpApi = new TreeMap<>();
            for (Object o : (List<?>) HttpProbe.json(api.get("/api/checkpoints")).get("checkpoints"))
                cpApi.put(num(((Map<?, ?>) o).get("id")), num(((Map<?, ?>) o).get("totalNanos")));
            Map<Long, Long> cpPage = pairs(page, "#chart-checkpoints g.cp", "data-total-nanos");
            if (!cpApi.equals(cpPage)) return "checkpoints: api " + cpApi + ", page " + cpPage;

            String writes = attrs(page, "#stat-writes", "data-value").get(0);
            if (!writes.equals(Long.toString(store.metrics().writes()))) return "writes: store " + store.metrics().writes() + ", page " + writes;
            long[] levels = store.metrics().archiveBytesPerLevel();
            List<String> bars = attrs(page, "#chart-levels rect.level", "data-bytes");
            if (bars.size() != levels.length) return "levels: store " + levels.length + ", page " + bars.size();
            for (int i = 0; i < levels.length; i++)
                if (Long.parseLong(bars.get(i)) != levels[i]) return "level " + (i + 1) + " bytes: store " + levels[i] + ", page " + bars.get(i);
            String live = attrs(page, "#stat-live", "data-value").get(0);
            if (!live.equals(Integer.toString(liveApi.size()))) return "live count: " + live;
            Map<?, ?> ship = (Map<?, ?>) HttpProbe.json(api.get("/api/metrics")).get("shipping");
            for (String[] stat : new String[][]{{"#stat-shipped", "imagesSent"}, {"#stat-ship-failed", "imagesFailed"}, {"#stat-followers", "followers"}}) {
                String shown = attrs(page, stat[0], "data-value").get(0);
                if (!shown.equals(Long.toString(num(ship.get(stat[1]))))) return stat[1] + ": api " + ship.get(stat[1]) + ", page " + shown;
            }
            return null;
        } catch (Exception e) {
            return e.toString();
        }
    }

    /**
     * The attribute {@code attr} of every element matching {@code css}, read in one script run: the page redraws on
     * every poll, so element handles kept across calls go stale.
     */
    @SuppressWarnings("unchecked")
    private static List<String> attrs(WebDriver page, String css, String attr) {
        return (List<String>) ((JavascriptExecutor) page).executeScript("var attr = arguments[1];"
                + " return Array.from(document.querySelectorAll(arguments[0])).map(function (e) { return e.getAttribute(attr); });", css, attr);
    }

    private static List<Long> ids(WebDriver page, String css) {
        return attrs(page, css, "data-id").stream().map(Long::parseLong).sorted().collect(Collectors.toList());
    }

    /** data-id to another attribute of the elements matching {@code css}, read at one instant. */
    @SuppressWarnings("unchecked")
    private static Map<Long, Long> pairs(WebDriver page, String css, String attr) {
        List<List<String>> rows = (List<List<String>>) ((JavascriptExecutor) page).executeScript("var attr = arguments[1];"
                + " return Array.from(document.querySelectorAll(arguments[0])).map(function (e) { return [e.getAttribute('data-id'), e.getAttribute(attr)]; });",
                css, attr);
        Map<Long, Long> out = new TreeMap<>();
        for (List<String> r : rows) out.put(Long.parseLong(r.get(0)), Long.parseLong(r.get(1)));
        return out;
    }

    private static long num(Object o) {
        return ((Number) o).longValue();
    }

    /**
     * Debian's chromium and chromedriver, headless, with its profile in {@code profile} (inside the test's temporary
     * directory, so it goes with it); nothing downloaded, no network beyond loopback.
     */
    static WebDriver chromium(Path profile) throws Exception {
        assertTrue(Files.isExecutable(Path.of("/usr/bin/chromedriver")), "apt-get install chromium chromium-driver");
        Files.createDirectories(profile);
        ChromeOptions options = new ChromeOptions();
        options.setBinary("/usr/bin/chromium");
        options.addArguments("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--user-data-dir=" + profile, "--window-size=1400,1500");
        ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(new File("/usr/bin/chromedriver")).usingAnyFreePort().build();
        WebDriver driver = new ChromeDriver(service, options);
        assertFalse(driver.getWindowHandles().isEmpty());
        return driver;
    }
}
