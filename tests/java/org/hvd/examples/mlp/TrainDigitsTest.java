package org.hvd.examples.mlp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.hvd.Hvd;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The Java MLP example trains for real on 2 ranks: it converges on the
 * digits and every rank ends with bit-identical parameters. Collective, so
 * the tests run in a fixed order on every rank.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class TrainDigitsTest {
  @BeforeAll
  static void init() {
    Hvd.init();
  }

  @AfterAll
  static void finish() {
    if (Hvd.isInitialized()) Hvd.shutdown();
  }

  static Path digits() {
    String path = System.getProperty("hvd.digits");
    assertNotNull(path, "-Dhvd.digits=examples/data/digits.txt is not set");
    return Path.of(path);
  }

  @Test
  @Order(1)
  void broadcastMakesReplicasEqual() {
    Mlp model = new Mlp(64, 8, 10, 1000 + Hvd.rank());
    assertEquals(2, Hvd.size(), "the ctest starts 2 ranks");
    DistributedOptimizer.broadcastParameters(model.parameters(), Mlp.NAMES, 0);
    assertTrue(TrainDigits.identicalAcrossRanks(model.parameters()));
    Mlp root = new Mlp(64, 8, 10, 1000); // what rank 0 started from
    assertEquals(root.w1[5], model.w1[5]);
  }

  @Test
  @Order(2)
  void oneStepAveragesTheGradients() {
    // A 1-parameter "model": each rank reports gradient rank+1; SGD without
    // momentum must move the parameter by lr * mean = 0.5 * 1.5.
    float[][] p = {{1f}};
    DistributedOptimizer opt = new DistributedOptimizer(p, new String[] {"unit"}, 0.5f, 0f);
    opt.grad(0)[0] = Hvd.rank() + 1;
    opt.gradientReady(0);
    assertThrows(IllegalStateException.class, () -> opt.gradientReady(0));
    opt.step();
    assertEquals(1f - 0.5f * 1.5f, p[0][0]);
    assertEquals(0f, opt.grad(0)[0], "step() zeroes the gradients");
  }

  @Test
  @Order(3)
  void trainsToHighAccuracyWithIdenticalReplicas() throws Exception {
    TrainDigits.Result r = TrainDigits.train(digits(), 10, Hvd.rank() == 0);
    assertTrue(r.loss < 0.15, "final training loss " + r.loss + " is not below 0.15");
    assertTrue(r.accuracy >= 0.93, "held-out accuracy " + r.accuracy + " is below 0.93");
    assertTrue(TrainDigits.identicalAcrossRanks(r.params), "replicas differ after training");
  }
}
