package tools

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/expr-lang/expr"

	"github.com/fenixrt/fenix/fenixerr"
)

func init() { register(calculatorTool()) }

// CalculatorArgs are the calculator's arguments.
type CalculatorArgs struct {
	Expression string `json:"expression" jsonschema:"minLength=1,maxLength=4096,description=An arithmetic or boolean expression such as 2 + 2 or (3 * 4) / 5"`
}

// CalculatorResult is the calculator's raw result.
type CalculatorResult struct {
	Expression string `json:"expression"`
	Value      any    `json:"value"`
	ValueText  string `json:"value_text"`
}

func calculatorTool() Definition {
	return Define(Spec{
		Name:        "calculator",
		Description: "Evaluate an arithmetic, comparison or boolean expression and return its value.",
		ReadOnly:    true,
		Idempotent:  true,
		Local:       true,
	}, evaluateExpression, func(_ CalculatorArgs, r CalculatorResult) Projection {
		return Projection{
			Content:  fmt.Sprintf("The calculator returned %s.", r.ValueText),
			Metadata: map[string]any{"expression": r.Expression, "value": r.Value},
		}
	})
}

// evaluateExpression compiles the expression with no environment, so it can
// use literals, operators and expr's pure builtins but no host data.
func evaluateExpression(_ context.Context, _ *Env, a CalculatorArgs) (CalculatorResult, error) {
	program, err := expr.Compile(a.Expression)
	if err != nil {
		return CalculatorResult{}, fenixerr.Validation("calculator cannot parse expression %q: %v", a.Expression, err)
	}
	out, err := expr.Run(program, nil)
	if err != nil {
		return CalculatorResult{}, fenixerr.Validation("calculator cannot evaluate expression %q: %v", a.Expression, err)
	}
	text, value, err := formatValue(out)
	if err != nil {
		return CalculatorResult{}, fenixerr.Validation("calculator expression %q: %v", a.Expression, err)
	}
	return CalculatorResult{Expression: a.Expression, Value: value, ValueText: text}, nil
}

func formatValue(v any) (string, any, error) {
	switch x := v.(type) {
	case int:
		return strconv.Itoa(x), x, nil
	case int64:
		return strconv.FormatInt(x, 10), x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", nil, fmt.Errorf("result is %v, not a finite number", x)
		}
		return strconv.FormatFloat(x, 'g', -1, 64), x, nil
	case bool:
		return strconv.FormatBool(x), x, nil
	case string:
		return strconv.Quote(x), x, nil
	case nil:
		return "nil", nil, nil
	default:
		return "", nil, fmt.Errorf("result of type %T is not a number, boolean or string", v)
	}
}
