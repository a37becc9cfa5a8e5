// placeholder until the checkers component lands
